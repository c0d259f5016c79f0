import SymBytes
import SymReport

extension Symbolicator {
    /// Modules resolved at once while their symbols are fetched: enough to hide a slow server's
    /// latency for a typical report (a handful of modules), few enough not to flood it.
    static let prefetchWidth = 6

    /// Fetch first, then look up: when a provider fetches over a network (debuginfod, a crashsym
    /// server), resolves every module that a frame of `report` uses, `prefetchWidth` at a time,
    /// so that their downloads overlap; the frames are then resolved in order from what is
    /// local. A module is resolved once however many threads ask (`resolveEntry`), so each
    /// build-id is fetched once; modules resolved for an earlier report cost a lookup.
    func prefetch(_ report: CrashReport, reportDirectory: String?) {
        guard provider.fetchesOverNetwork else { return }
        var seen = Set<String>()
        var modules: [ReportModule] = []
        for stack in report.stacks {
            for frame in stack.frames {
                guard let index = frame.module, index < report.modules.count else { continue }
                let module = report.modules[index]
                let key = module.buildID ?? "\0" + Self.pathKey(module, reportDirectory: reportDirectory)
                if seen.insert(key).inserted && !isResolved(module, reportDirectory: reportDirectory) { modules.append(module) }
            }
        }
        // Nothing to overlap when at most one module is left to resolve (a stream of reports of
        // one program after its first): no threads.
        guard modules.count > 1 else { return }
        // Threads of their own, not Dispatch's, whose width is the number of cores: these wait.
        let width = min(Self.prefetchWidth, modules.count)
        ConcurrentWork.run((0..<width).map { first in
            { [modules] in
                for index in Swift.stride(from: first, to: modules.count, by: width) {
                    _ = self.resolveEntry(modules[index], reportDirectory: reportDirectory)
                }
            }
        })
    }

    /// Whether `module` was resolved already (for an earlier report of this symbolicator).
    private func isResolved(_ module: ReportModule, reportDirectory: String?) -> Bool {
        let key = ModuleSlots.Key(module, reportDirectory: reportDirectory)
        let slot = modules.withLock { $0.slot(key) }
        return slot?.value.withLock { $0 != nil } ?? false
    }
}
