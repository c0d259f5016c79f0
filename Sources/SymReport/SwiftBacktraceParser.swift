import SymBytes

/// Reads the Swift runtime backtracer's reports: the JSON crash log
/// (`SWIFT_BACKTRACE=enable=yes,symbolicate=off,format=json`) and the text form with its
/// "Images" section.
///
/// Address convention: frames are raw addresses; the backtracer marks return addresses
/// (`"kind": "returnAddress"`, `[ra]` in text), which are looked up at `pc - 1`; the faulting
/// `programCounter` and `[async]` resume points are exact. Images give the lowest mapped address
/// (`baseAddress`), so offsets are from the mapping start.
enum SwiftBacktraceParser {
    static func parseJSON(_ text: String) throws(FormatError) -> CrashReport {
        try parseJSON(value: try JSONValue.parse(text))
    }

    static func parseJSON(value root: JSONValue) throws(FormatError) -> CrashReport {
        guard let threads = root["threads"]?.array else {
            throw FormatError(.invalidValue, "the Swift crash log has no \"threads\" array")
        }
        var report = CrashReport(format: .swiftJSON)
        report.signal = root["description"]?.string
        report.reason = root["description"]?.string
        for key in ["timestamp", "kind", "faultAddress", "platform", "architecture"] {
            if let value = root[key]?.string { report.metadata.append(ReportMetadata(key, value)) }
        }
        for image in root["images"]?.array ?? [] {
            let path = image["path"]?.string ?? image["name"]?.string ?? "?"
            var module = ReportModule(path: path, name: image["name"]?.string)
            if let id = image["buildId"]?.string, LineCursor.isBuildID(id) { module.buildID = id.lowercased() }
            module.loadAddress = image["baseAddress"]?.unsigned
            if let start = module.loadAddress, let end = image["endOfText"]?.unsigned, end >= start { module.size = end - start }
            report.modules.append(module)
        }
        let ranges = ModuleRanges(report.modules)
        for (number, thread) in threads.enumerated() {
            var stack = ReportStack(name: thread["name"]?.string, thread: String(number),
                                    crashed: thread["crashed"]?.bool ?? false)
            var index = 0
            for frame in thread["frames"]?.array ?? [] {
                let kind = frame["kind"]?.string ?? ""
                guard kind == "programCounter" || kind == "returnAddress" || kind == "asyncResumePoint" else {
                    continue  // "truncated", "omittedFrames": no address
                }
                var entry = ReportFrame(index: index, offsetBase: .mappingStart,
                                        convention: kind == "returnAddress" ? .returnAddress : .exact)
                index += 1
                guard let address = frame["address"]?.unsigned else {
                    entry.problem = "frame \(entry.index) of thread \(number) has no readable address"
                    stack.frames.append(entry)
                    continue
                }
                entry.address = address
                entry.module = ranges.module(containing: address)
                entry.function = frame["symbol"]?.string
                stack.frames.append(entry)
            }
            report.stacks.append(stack)
        }
        return report
    }

    static func parseText(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .swiftText, lines: lines)
        var inImages = false
        for (number, line) in lines.enumerated() {
            let text = String(line).trimmed
            if text.hasPrefix("*** Program crashed: ") {
                var detail = String(text.dropFirst(21))
                if detail.hasSuffix(" ***") { detail = String(detail.dropLast(4)) }
                report.reason = detail
                report.signal = detail.byteRange(of: " at 0x").map { String(detail[..<$0.lowerBound]) } ?? detail
                continue
            }
            if text.hasPrefix("Platform: ") { report.metadata.append(ReportMetadata("platform", String(text.dropFirst(10)))) }
            if text.hasPrefix("Images") && text.hasSuffix(":") { inImages = true; continue }
            if text.hasPrefix("Thread ") && text.hasSuffix(":") {
                inImages = false
                var cursor = LineCursor(Substring(text), at: 7)
                let id = cursor.decimal().map(String.init)
                cursor.skipSpaces()
                var name: String?
                if cursor.skip("\""), let quoted = cursor.take(until: UInt8(ascii: "\"")) { name = quoted }
                report.stacks.append(ReportStack(name: name, thread: id, crashed: text.hasSuffix(" crashed:")))
                continue
            }
            if inImages {
                // `0xSTART–0xEND build-id|<no build ID> name path`
                var cursor = LineCursor(Substring(text))
                guard let start = cursor.hexNumber() else { continue }
                guard cursor.skip("–") || cursor.skip("-"), let end = cursor.hexNumber() else { continue }
                cursor.skipSpaces()
                var buildID: String?
                if cursor.skip("<no build ID>") {
                } else if let id = cursor.take(until: 0x20), LineCursor.isBuildID(id) {
                    buildID = id.lowercased()
                }
                cursor.skipSpaces()
                let name = cursor.take(until: 0x20) ?? cursor.rest()
                cursor.skipSpaces()
                let path = cursor.rest().trimmed
                report.modules.append(ReportModule(path: path.isEmpty ? name : path, name: name, buildID: buildID,
                                                   loadAddress: start, size: end >= start ? end - start : nil))
                continue
            }
            // `N [ra] 0xADDR …`, `N [async] 0xADDR …`, `N      0xADDR`
            guard !report.stacks.isEmpty else { continue }
            var cursor = LineCursor(line)
            cursor.skipSpaces()
            guard let index = cursor.decimal(), cursor.skipSpaces() > 0 else { continue }
            var convention = AddressConvention.exact
            if cursor.skip("[ra]") { convention = .returnAddress } else { _ = cursor.skip("[async]") }
            cursor.skipSpaces()
            _ = cursor.skip("[inlined]")
            cursor.skipSpaces()
            guard let address = cursor.hexNumber() else { continue }  // `5      ...` and the like
            let frame = ReportFrame(index: index, address: address, offsetBase: .mappingStart,
                                    convention: convention, line: number)
            report.stacks[report.stacks.count - 1].frames.append(frame)
        }
        // Images come after the threads: place every frame now.
        let ranges = ModuleRanges(report.modules)
        for s in report.stacks.indices {
            for f in report.stacks[s].frames.indices {
                guard let address = report.stacks[s].frames[f].address else { continue }
                report.stacks[s].frames[f].module = ranges.module(containing: address)
            }
        }
        return report
    }
}
