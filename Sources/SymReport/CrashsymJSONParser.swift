import SymBytes

/// Reads crashsym's own JSON crash report (docs/crash-report.md). The symbolicated JSON that
/// `crashsym symbolicate --format json` prints is itself a valid input: a frame's `symbolized`
/// chain is kept as the sender's (`ReportFrame.senderLocations`), its other output members
/// (`status`, `reason`…) are ignored.
enum CrashsymJSONParser {
    static func parse(_ text: String) throws(FormatError) -> CrashReport {
        try parse(value: try JSONValue.parse(text))
    }

    static func parse(value root: JSONValue) throws(FormatError) -> CrashReport {
        guard let stacks = root["stacks"]?.array else {
            throw FormatError(.invalidValue, "the crash report has no \"stacks\" array")
        }
        var report = CrashReport(format: .crashsymJSON)
        report.signal = root["signal"]?.string
        report.reason = root["reason"]?.string
        if case .object(let members)? = root["metadata"] {
            for (key, value) in members {
                if let text = value.string { report.metadata.append(ReportMetadata(key, text)) }
                else if case .number(let number) = value { report.metadata.append(ReportMetadata(key, number)) }
            }
        }
        for (position, module) in (root["modules"]?.array ?? []).enumerated() {
            guard let path = module["path"]?.string ?? module["name"]?.string else {
                throw FormatError(.invalidValue, "modules[\(position)] has neither \"path\" nor \"name\"")
            }
            var entry = ReportModule(path: path, name: module["name"]?.string)
            if let id = module["build_id"]?.string {
                guard LineCursor.isBuildID(id) else { throw FormatError(.invalidValue, "modules[\(position)].build_id is not hex: '\(id)'") }
                entry.buildID = id.lowercased()
            }
            entry.loadAddress = module["load_address"]?.unsigned
            entry.size = module["size"]?.unsigned
            entry.fileOffset = module["file_offset"]?.unsigned
            report.modules.append(entry)
        }
        // Modules by name and by path (the first with each), and by address range: each frame
        // finds its module without a scan of all modules.
        var byName: [String: Int] = [:], byPath: [String: Int] = [:]
        for (index, module) in report.modules.enumerated() {
            if byName[module.name] == nil { byName[module.name] = index }
            if byPath[module.path] == nil { byPath[module.path] = index }
        }
        let ranges = ModuleRanges(report.modules)
        for (s, stack) in stacks.enumerated() {
            var entry = ReportStack(name: stack["name"]?.string, thread: stack["thread"]?.string ?? stack["thread"]?.unsigned.map { String($0) },
                                    crashed: stack["crashed"]?.bool ?? false)
            for (f, frame) in (stack["frames"]?.array ?? []).enumerated() {
                var parsed = ReportFrame(index: frame["index"]?.unsigned.flatMap { Int(exactly: $0) } ?? f)
                parsed.address = frame["address"]?.unsigned
                parsed.moduleOffset = frame["module_offset"]?.unsigned
                parsed.offsetBase = .virtualAddress
                switch frame["address_kind"]?.string {
                case nil, "exact": parsed.convention = .exact
                case "return-address": parsed.convention = .returnAddress
                case let other?: throw FormatError(.invalidValue, "stacks[\(s)].frames[\(f)].address_kind '\(other)' is not exact or return-address")
                }
                if let foundBy = frame["found_by"]?.string {
                    guard let known = ReportFrame.FoundBy(rawValue: foundBy) else {
                        let names = ReportFrame.FoundBy.allCases.map(\.rawValue).joined(separator: ", ")
                        throw FormatError(.invalidValue, "stacks[\(s)].frames[\(f)].found_by '\(foundBy)' is not one of \(names)")
                    }
                    parsed.foundBy = known
                }
                if let index = frame["module_index"]?.unsigned {
                    guard index < UInt64(report.modules.count) else {
                        throw FormatError(.invalidValue, "stacks[\(s)].frames[\(f)].module_index is not an index into \"modules\"")
                    }
                    parsed.module = Int(index)
                } else {
                    switch frame["module"] {
                    case .string(let name)?:
                        let id = frame["build_id"]?.string.flatMap { LineCursor.isBuildID($0) ? $0.lowercased() : nil }
                        if let known = [byName[name], byPath[name]].compactMap({ $0 }).min() {
                            parsed.module = known
                        } else {
                            let module = ReportModule(path: name, buildID: id)
                            report.modules.append(module)
                            parsed.module = report.modules.count - 1
                            if byName[module.name] == nil { byName[module.name] = parsed.module }
                            byPath[name] = parsed.module
                        }
                    case .number?:
                        guard let index = frame["module"]?.unsigned, index < UInt64(report.modules.count) else {
                            throw FormatError(.invalidValue, "stacks[\(s)].frames[\(f)].module is not an index into \"modules\"")
                        }
                        parsed.module = Int(index)
                    default:
                        if let address = parsed.address {
                            parsed.module = ranges.module(containing: address)
                            if parsed.module != nil, parsed.moduleOffset == nil { parsed.offsetBase = .mappingStart }
                        }
                    }
                }
                parsed.senderLocations = senderLocations(frame["symbolized"])
                if parsed.address == nil && parsed.moduleOffset == nil {
                    parsed.problem = "stacks[\(s)].frames[\(f)] has neither \"address\" nor \"module_offset\""
                }
                entry.frames.append(parsed)
            }
            report.stacks.append(entry)
        }
        return report
    }

    /// The longest sender's chain kept for one frame (deeper inline chains are cut: a hostile
    /// report must not make one frame cost more than a real one does).
    static let maximumSenderLocations = 64

    /// A frame's `"symbolized"` chain as the sender wrote it; elements without a function name
    /// are skipped, and a value that is not an array gives none.
    static func senderLocations(_ value: JSONValue?) -> [SourceLocation] {
        guard let elements = value?.array, !elements.isEmpty else { return [] }
        var locations: [SourceLocation] = []
        for element in elements.prefix(maximumSenderLocations) {
            guard let function = element["function"]?.string, !function.isEmpty else { continue }
            locations.append(SourceLocation(
                function: function, mangled: element["mangled"]?.string ?? function, file: element["file"]?.string ?? "",
                line: element["line"]?.unsigned.flatMap { UInt32(exactly: $0) } ?? 0,
                column: element["column"]?.unsigned.flatMap { UInt32(exactly: $0) } ?? 0))
        }
        return locations
    }
}
