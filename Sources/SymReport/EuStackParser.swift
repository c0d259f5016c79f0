/// Reads `eu-stack -b -l` output (elfutils): a module memory map (`0xSTART-0xEND name`, then
/// `[build-id]`, the main file and the debug file, each on its own indented line) and one stack
/// per `TID n:` with frames `#N  0xPC function` followed by `[build-id]@0xSTART+0xOFFSET`.
///
/// Address convention: eu-stack prints the raw pc, but computes the `+0x…` offset from the pc
/// already moved back into the call for caller frames (`dwfl_frame_pc` with `isactivation`), so
/// the offset is `.exact`; it is relative to the module's lowest mapped address. A frame without
/// the `-b` line is placed by the module map and, for callers, treated as a return address.
enum EuStackParser {
    static func parse(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .euStack, lines: lines)
        var pendingModule: Int?      // module whose indented detail lines follow
        var detailLine = 0           // which detail line of the module comes next
        var lastFrame: (stack: Int, frame: Int)?
        for (number, line) in lines.enumerated() {
            var cursor = LineCursor(line)
            let indented = cursor.skipSpaces() > 0
            if !indented, let start = cursor.hexNumber(), cursor.skip("-"), let end = cursor.hexNumber(), cursor.skipSpaces() > 0 {
                // Module map entry.
                let name = cursor.rest().trimmed
                report.modules.append(ReportModule(path: name, name: name, loadAddress: start,
                                                   size: end >= start ? end - start : nil))
                pendingModule = report.modules.count - 1
                detailLine = 0
                lastFrame = nil
                continue
            }
            if indented, let module = pendingModule {
                let text = String(line).trimmed
                if detailLine == 0, text.hasPrefix("["), text.hasSuffix("]") {
                    let id = String(text.dropFirst().dropLast())
                    if LineCursor.isBuildID(id) { report.modules[module].buildID = id.lowercased() }
                } else if detailLine == 1, text.hasPrefix("/") {
                    report.modules[module].path = text
                } else if detailLine == 2, text != "-" {
                    report.metadata.append(ReportMetadata("debug_file", text))
                }
                detailLine += 1
                continue
            }
            pendingModule = nil
            if !indented, cursor.skip("PID ") {
                if let pid = cursor.decimal(), !report.metadata.contains(where: { $0.key == "pid" }) {
                    report.metadata.append(ReportMetadata("pid", String(pid)))
                }
                lastFrame = nil
                continue
            }
            if !indented, cursor.skip("TID "), let tid = cursor.decimal(), cursor.skip(":") {
                report.stacks.append(ReportStack(name: "TID \(tid)", thread: String(tid), crashed: false))
                lastFrame = nil
                continue
            }
            if !indented, cursor.skip("#"), let index = cursor.decimal(), cursor.skipSpaces() > 0 {
                if report.stacks.isEmpty { report.stacks.append(ReportStack(name: nil, thread: nil)) }
                var frame = ReportFrame(index: index, offsetBase: .mappingStart, line: number)
                frame.address = cursor.hexNumber()
                if frame.address == nil { frame.problem = "no address on this frame line" }
                cursor.skipSpaces()
                let function = cursor.rest().trimmed
                if !function.isEmpty && function != "??" { frame.function = function }
                // Placed by the module map until a `-b` line says more.
                frame.convention = index == 0 ? .exact : .returnAddress
                if let pc = frame.address, let module = report.modules.firstIndex(where: { module in
                    guard let start = module.loadAddress, let size = module.size else { return false }
                    return pc >= start && pc - start < size
                }) {
                    frame.module = module
                }
                let stack = report.stacks.count - 1
                report.stacks[stack].frames.append(frame)
                lastFrame = (stack, report.stacks[stack].frames.count - 1)
                continue
            }
            if indented, let (s, f) = lastFrame, cursor.skip("[") {
                // `[build-id]@0xSTART+0xOFFSET`: the adjusted offset from the module start.
                guard let id = cursor.take(until: UInt8(ascii: "]")), cursor.skip("]"), cursor.skip("@"),
                      let start = cursor.hexNumber(), cursor.skip("+"), let offset = cursor.hexNumber() else {
                    report.stacks[s].frames[f].problem = "cannot read the '[build-id]@0xstart+0xoffset' line \(number + 1)"
                    continue
                }
                var frame = report.stacks[s].frames[f]
                let buildID = LineCursor.isBuildID(id) ? id.lowercased() : nil
                if let module = report.modules.firstIndex(where: { $0.buildID != nil && $0.buildID == buildID })
                    ?? report.modules.firstIndex(where: { $0.loadAddress == start }) {
                    frame.module = module
                } else {
                    report.modules.append(ReportModule(path: buildID ?? id, buildID: buildID, loadAddress: start))
                    frame.module = report.modules.count - 1
                }
                frame.moduleOffset = offset
                frame.offsetBase = .mappingStart
                frame.convention = .exact
                report.stacks[s].frames[f] = frame
                continue
            }
            // Source lines (`-s`) and anything else are kept as they are.
        }
        // Frames read before the module map (some versions print it last) are placed now.
        for s in report.stacks.indices {
            for f in report.stacks[s].frames.indices where report.stacks[s].frames[f].module == nil {
                guard let pc = report.stacks[s].frames[f].address else { continue }
                report.stacks[s].frames[f].module = report.modules.firstIndex(where: { module in
                    guard let start = module.loadAddress, let size = module.size else { return false }
                    return pc >= start && pc - start < size
                })
            }
        }
        return report
    }
}
