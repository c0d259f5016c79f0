/// Reads `eu-stack` output (elfutils) of a process (`-p`) or a core file (`--core`), in every
/// variant it prints: a `PID n - process|core` header, with `-l` a module memory map first
/// (`0xSTART-0xEND name`, then `[build-id]`, the main file and the debug file, each on its own
/// indented line), one stack per `TID n:` with frames `#N  0xPC[ - 1][ function][ - module]`
/// (`-q` drops the function, `-a` adds the ` - 1` activation mark, `-m` the module name), with
/// `-b` each followed by `[build-id]@0xSTART+0xOFFSET`, and with `-s` by a source line.
///
/// Address convention: eu-stack prints the raw pc, but computes the `+0x…` offset from the pc
/// already moved back into the call for caller frames (`dwfl_frame_pc` with `isactivation`), so
/// the offset is `.exact`; it is relative to the module's lowest mapped address. A frame without
/// the `-b` line is placed by the module map and, for callers, treated as a return address
/// (with `-a`, exactly the frames marked ` - 1` are).
///
/// Modules are indexed by build-id, start address and range, so a report of any size is read in
/// linear time.
enum EuStackParser {
    /// Whether `trimmed` is a line only eu-stack prints: its `PID n - process` or `PID n - core`
    /// header (with or without ` module memory map`), or a `TID n:` stack header.
    static func isHeader(_ trimmed: String) -> Bool {
        var cursor = LineCursor(Substring(trimmed))
        if cursor.skip("PID "), cursor.decimal() != nil, cursor.skip(" - ") {
            let rest = cursor.rest()
            return rest == "process" || rest == "core" || rest == "process module memory map" || rest == "core module memory map"
        }
        cursor = LineCursor(Substring(trimmed))
        return cursor.skip("TID ") && cursor.decimal() != nil && cursor.skip(":") && cursor.atEnd
    }

    static func parse(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .euStack, lines: lines)
        var pendingModule: Int?      // module whose indented detail lines follow
        var detailLine = 0           // which detail line of the module comes next
        var lastFrame: (stack: Int, frame: Int)?
        var isCore = false
        var havePID = false
        var mapNames: Set<String> = []
        // The first module with each build-id and each start address.
        var byBuildID: [String: Int] = [:]
        var byStart: [UInt64: Int] = [:]
        // Frames without a `-b` line, placed by the module map at the end; whether the frame was
        // marked ` - 1` (`-a`), and whether any was.
        var unplaced: [(stack: Int, frame: Int, marked: Bool)] = []
        var sawMark = false
        for (number, line) in lines.enumerated() {
            var cursor = LineCursor(line)
            let indented = cursor.skipSpaces() > 0
            if !indented, let start = cursor.hexNumber(), cursor.skip("-"), let end = cursor.hexNumber(), cursor.skipSpaces() > 0 {
                // Module map entry.
                let name = cursor.rest().trimmed
                report.modules.append(ReportModule(path: name, name: name, loadAddress: start,
                                                   size: end >= start ? end - start : nil))
                pendingModule = report.modules.count - 1
                if byStart[start] == nil { byStart[start] = report.modules.count - 1 }
                mapNames.insert(name)
                detailLine = 0
                lastFrame = nil
                continue
            }
            if indented, let module = pendingModule {
                let text = String(line).trimmed
                if detailLine == 0, text.hasPrefix("["), text.hasSuffix("]") {
                    let id = String(text.dropFirst().dropLast())
                    if LineCursor.isBuildID(id) {
                        report.modules[module].buildID = id.lowercased()
                        if byBuildID[id.lowercased()] == nil { byBuildID[id.lowercased()] = module }
                    }
                } else if detailLine == 1, text != "-", !text.isEmpty {
                    // The main file as eu-stack found it: absolute, or relative to where it ran
                    // (`--executable ./app`).
                    report.modules[module].path = text
                } else if detailLine == 2, text != "-" {
                    report.metadata.append(ReportMetadata("debug_file", text))
                }
                detailLine += 1
                continue
            }
            pendingModule = nil
            if !indented, cursor.skip("PID ") {
                if let pid = cursor.decimal(), !havePID {
                    havePID = true
                    report.metadata.append(ReportMetadata("pid", String(pid)))
                }
                if cursor.skip(" - core") { isCore = true }
                lastFrame = nil
                continue
            }
            if !indented, cursor.skip("TID "), let tid = cursor.decimal(), cursor.skip(":") {
                // A core file lists the thread that dumped it first (the kernel writes its
                // NT_PRSTATUS note first); a live process has no crashed thread.
                report.stacks.append(ReportStack(name: "TID \(tid)", thread: String(tid),
                                                 crashed: isCore && report.stacks.isEmpty))
                lastFrame = nil
                continue
            }
            if !indented, cursor.skip("#"), let index = cursor.decimal(), cursor.skipSpaces() > 0 {
                if report.stacks.isEmpty { report.stacks.append(ReportStack(name: nil, thread: nil, crashed: isCore)) }
                var frame = ReportFrame(index: index, offsetBase: .mappingStart, line: number)
                frame.address = cursor.hexNumber()
                if frame.address == nil { frame.problem = "no address on this frame line" }
                cursor.skipSpaces()
                // `-a`: ` - 1` marks a pc looked up one byte back (a return address).
                var marked = false
                if cursor.looking(at: "- 1"), cursor.index + 3 == cursor.bytes.count || cursor.bytes[cursor.index + 3] == 0x20 {
                    marked = true
                    sawMark = true
                    _ = cursor.skip("- 1")
                    cursor.skipSpaces()
                }
                frame.function = function(in: cursor.rest().trimmed, mapNames: mapNames)
                frame.convention = index == 0 ? .exact : .returnAddress
                let stack = report.stacks.count - 1
                report.stacks[stack].frames.append(frame)
                lastFrame = (stack, report.stacks[stack].frames.count - 1)
                unplaced.append((stack, report.stacks[stack].frames.count - 1, marked))
                continue
            }
            if indented, let (s, f) = lastFrame, cursor.skip("[") {
                // `[build-id]@0xSTART+0xOFFSET`: the adjusted offset from the module start.
                lastFrame = nil
                guard let id = cursor.take(until: UInt8(ascii: "]")), cursor.skip("]"), cursor.skip("@"),
                      let start = cursor.hexNumber(), cursor.skip("+"), let offset = cursor.hexNumber() else {
                    report.stacks[s].frames[f].problem = "cannot read the '[build-id]@0xstart+0xoffset' line \(number + 1)"
                    continue
                }
                var frame = report.stacks[s].frames[f]
                let buildID = LineCursor.isBuildID(id) ? id.lowercased() : nil
                if let module = buildID.flatMap({ byBuildID[$0] }) ?? byStart[start] {
                    frame.module = module
                } else {
                    report.modules.append(ReportModule(path: buildID ?? id, buildID: buildID, loadAddress: start))
                    frame.module = report.modules.count - 1
                    if let buildID { byBuildID[buildID] = frame.module }
                    if byStart[start] == nil { byStart[start] = frame.module }
                }
                frame.moduleOffset = offset
                frame.offsetBase = .mappingStart
                frame.convention = .exact
                report.stacks[s].frames[f] = frame
                continue
            }
            // Source lines (`-s`) and anything else are kept as they are.
        }
        // Frames without a `-b` line are placed by the module map (printed first with `-l`).
        let ranges = ModuleRanges(report.modules)
        for (s, f, marked) in unplaced where report.stacks[s].frames[f].module == nil {
            if sawMark { report.stacks[s].frames[f].convention = marked ? .returnAddress : .exact }
            guard let pc = report.stacks[s].frames[f].address else { continue }
            report.stacks[s].frames[f].module = ranges.module(containing: pc)
        }
        return report
    }

    /// The function name of a frame line's rest, without the ` - module` that `-m` appends (when
    /// it names a module of the map); nil for none (`-q`) or `??`.
    private static func function(in rest: String, mapNames: Set<String>) -> String? {
        var bytes = Array(rest.utf8)
        let dash: [UInt8] = [0x20, UInt8(ascii: "-"), 0x20]
        if bytes.starts(with: dash.dropFirst()) {
            return nil  // `-q -m`: the module name alone
        }
        if bytes.count > 3, let cut = (0...(bytes.count - 3)).reversed().first(where: { bytes[$0..<($0 + 3)].elementsEqual(dash) }),
           mapNames.contains(String(decoding: bytes[(cut + 3)...], as: UTF8.self)) {
            bytes.removeSubrange(cut...)
        }
        let trimmed = String(decoding: bytes, as: UTF8.self).trimmed
        return trimmed.isEmpty || trimmed == "??" ? nil : trimmed
    }
}
