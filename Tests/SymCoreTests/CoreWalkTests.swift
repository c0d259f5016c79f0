import Foundation
import SymBytes
import SymCore
import SymELF
import SymReport
import SymUnwind
import Symbolication
import Testing
import TestSupport

/// The walk of real cores (`scripts/build-core-fixtures`, run into a temporary directory) before
/// symbolication: what the walker alone decides.
@Suite struct CoreWalkTests {
    static var cores: String? { CoreFixtures.directory }

    static func report(_ name: String) throws -> CrashReport {
        let directory = try #require(cores, "scripts/build-core-fixtures failed")
        let core = try CoreFile(file: MappedFile(path: "\(directory)/\(name).core"))
        let symbolicator = Symbolicator(sources: SymbolSources(searchPaths: [], useModulePaths: true, cacheDirectory: nil))
        return try symbolicator.report(core: core, path: "\(directory)/\(name).core")
    }

    @Test("The frame a signal interrupted is exact by the walker's own finding (augmentation S), its caller a return address")
    func interruptedFrameIsExact() throws {
        let report = try Self.report("signal-abort")
        let frames = try #require(report.stacks.first?.frames)
        let libc = try #require(report.modules.firstIndex { $0.name.hasPrefix("libc.so") })
        // handler's caller is __restore_rt in libc; the frame after it is fault in the program.
        let trampoline = try #require(frames.indices.first { frames[$0].module == libc && $0 + 1 < frames.count && frames[$0 + 1].module == 0 && $0 > 3 })
        #expect(frames[trampoline + 1].convention == .exact)
        #expect(frames[trampoline + 2].convention == .returnAddress)
        #expect(frames[0].convention == .exact)
        #expect(frames.dropFirst().filter { $0.convention == .exact }.count == 1)
    }

    @Test("Rows found on demand through .eh_frame_hdr walk exactly as the whole CFI read first", arguments: ["threads", "signal-abort", "crash-O2"])
    func onDemandRulesEqualWholeCFI(_ name: String) throws {
        let directory = try #require(Self.cores, "scripts/build-core-fixtures failed")
        let core = try CoreFile(file: MappedFile(path: "\(directory)/\(name).core"))
        func modules(whole: Bool) -> [WalkModule] {
            core.modules.map { WalkModule(start: $0.start, end: $0.end, binary: try? ELFFile(path: $0.path), wholeCFI: whole) }
        }
        let lazy = modules(whole: false), whole = modules(whole: true)
        #expect(lazy.contains { $0.cfi == nil && $0.rules != nil })
        for thread in core.threads {
            let onDemand = try core.walk(thread, modules: lazy)
            let read = try core.walk(thread, modules: whole)
            #expect(onDemand == read)
            #expect(onDemand.count > 3)
            // Every caller found by CFI: the walk never fell back to frame pointers or scanning.
            #expect(onDemand.dropFirst().allSatisfy { $0.trust == .cfi }, "\(onDemand.map { ($0.pc, $0.trust) })")
        }
    }

    @Test("Every thread of the multi-threaded core ends in clone3, the crashed one marked")
    func threadsEndInClone() throws {
        let report = try Self.report("threads")
        #expect(report.stacks.count == 4)
        #expect(report.stacks.filter(\.crashed).count == 1)
        #expect(report.stacks.first?.crashed == true)
        // Build-ids of the program, libc and the loader from the core's memory.
        #expect(report.modules.allSatisfy { $0.buildID?.count == 40 }, "\(report.modules)")
        #expect(report.modules.contains { $0.path == "[vdso]" })
    }
}
