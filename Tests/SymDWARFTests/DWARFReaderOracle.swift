import SymDWARF
import SymTable

/// What a model extracted from a file must contain, computed from llvm-dwarfdump-14's text output
/// (`--debug-info`, `--debug-line`) with the model's conventions (see `ModelBuilder`): an oracle
/// that shares no decoding with the reader.
struct DWARFReaderOracle {
    /// An expected scope.
    struct Scope: Equatable, CustomStringConvertible {
        var name: String
        /// Index of the parent in the expected scopes, or -1 for a physical function.
        var parent: Int
        var ranges: [AddressRange]
        /// Acceptable call-site paths (llvm-dwarfdump prints llvm's path, which may map back to more
        /// than one file entry); empty for none.
        var callFiles: Set<String>
        var callLine: UInt32
        var callColumn: UInt32
        /// `.debug_info` offset of the DIE, for messages.
        var offset: Int

        var description: String {
            "DIE 0x\(String(offset, radix: 16)) \(name) parent \(parent) ranges \(ranges.map { "[\(DWARFReaderOracle.hex($0.start)), \(DWARFReaderOracle.hex($0.end)))" }) call \(callFiles.sorted()):\(callLine):\(callColumn)"
        }
    }

    /// An expected line row.
    struct Row: Equatable, CustomStringConvertible {
        var address: UInt64
        var path: String
        var line: UInt32
        var column: UInt32
        var isEndSequence: Bool

        var description: String { "\(DWARFReaderOracle.hex(address)) \(path):\(line):\(column)\(isEndSequence ? " end" : "")" }
    }

    var scopes: [Scope] = []
    var rows: [Row] = []

    /// Runs llvm-dwarfdump-14 on `path` and derives the expected model.
    static func load(_ path: String) throws -> DWARFReaderOracle {
        let info = try DWARFReaderShell.run(
            "llvm-dwarfdump-14 --debug-info \(DWARFReaderShell.quote(path)) | awk \(DWARFReaderShell.quote(infoFilter))")
        let line = try DWARFReaderShell.run("llvm-dwarfdump-14 --debug-line \(DWARFReaderShell.quote(path))")
        var oracle = DWARFReaderOracle()
        let units = parseInfo(info)
        let tables = parseLineTables(line)
        oracle.derive(units: units, tables: tables)
        return oracle
    }

    /// Keeps DIE lines (for the tree shape), unit headers, and the attributes the model needs of
    /// unit, subprogram and inlined-subroutine DIEs; llvm-dwarfdump's full output of a large file
    /// is hundreds of megabytes.
    static let infoFilter = #"""
        /^0x[0-9a-f]+: +(DW_TAG_|NULL)/ {
          keep = ($2 ~ /^DW_TAG_(subprogram|inlined_subroutine|compile_unit|partial_unit|skeleton_unit|type_unit)$/)
          if ($2 != "NULL") print
          inranges = 0
          next
        }
        /^0x[0-9a-f]+: [A-Za-z ]*[Uu]nit:/ { print; keep = 0; next }
        keep && /^ +DW_AT_(name|linkage_name|MIPS_linkage_name|low_pc|high_pc|ranges|abstract_origin|specification|declaration|call_file|call_line|call_column|comp_dir|stmt_list|dwo_name|GNU_dwo_name|GNU_dwo_id)\t/ {
          print; inranges = ($1 == "DW_AT_ranges"); next
        }
        keep && inranges && /^ +\[0x[0-9a-f]+, 0x[0-9a-f]+\)\)?$/ { print; next }
        { inranges = 0 }
        """#

    // MARK: .debug_info

    /// A DIE as llvm-dwarfdump printed it.
    struct DIE {
        var offset: Int
        var depth: Int
        var tag: String
        var attributes: [String: String] = [:]
        var ranges: [AddressRange] = []
    }

    /// A unit: its type and DIEs in order (the unit DIE first).
    struct Unit {
        var type: String
        var dies: [DIE] = []
    }

    static func parseInfo(_ text: [UInt8]) -> [Unit] {
        var units: [Unit] = []
        for line in lines(text) {
            if line.hasPrefix("0x") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let offset = Int(line[line.index(line.startIndex, offsetBy: 2)..<colon], radix: 16) ?? -1
                let rest = line[line.index(after: colon)...]
                if rest.contains("Unit:") {
                    let type = rest.firstRange(of: "unit_type = ").map { rest[$0.upperBound...].prefix { $0 != "," } }
                    units.append(Unit(type: type.map(String.init) ?? "DW_UT_compile"))
                    continue
                }
                let spaces = rest.prefix { $0 == " " }.count
                let tag = String(rest.dropFirst(spaces))
                if units.isEmpty { units.append(Unit(type: "DW_UT_compile")) }
                units[units.count - 1].dies.append(DIE(offset: offset, depth: (spaces - 1) / 2, tag: tag))
            } else if let start = line.firstIndex(where: { $0 != " " }) {
                guard !units.isEmpty, !units[units.count - 1].dies.isEmpty else { continue }
                let body = line[start...]
                if body.hasPrefix("[") {
                    // A range of the DW_AT_ranges just above: "[0x…, 0x…)" (and ")" closing the list).
                    let parts = body.dropFirst().split(separator: ",")
                    guard parts.count == 2, let low = number(parts[0]),
                          let high = number(parts[1].drop { $0 == " " }.prefix { $0 != ")" }) else { continue }
                    units[units.count - 1].dies[units[units.count - 1].dies.count - 1].ranges
                        .append(AddressRange(start: low, end: high))
                } else if let tab = body.firstIndex(of: "\t") {
                    let name = String(body[..<tab])
                    var value = body[body.index(after: tab)...]
                    if value.hasPrefix("(") { value = value.dropFirst() }
                    if value.hasSuffix(")") { value = value.dropLast() }
                    units[units.count - 1].dies[units[units.count - 1].dies.count - 1].attributes[name] = String(value)
                }
            }
        }
        return units
    }

    // MARK: .debug_line

    /// A line table as llvm-dwarfdump printed it.
    struct LineTable {
        var version = 0
        var directories: [Int: String] = [:]
        var files: [Int: (name: String, directory: Int)] = [:]
        /// (address, line, column, file, end_sequence) in program order.
        var rows: [(UInt64, UInt32, UInt32, Int, Bool)] = []
    }

    static func parseLineTables(_ text: [UInt8]) -> [Int: LineTable] {
        var tables: [Int: LineTable] = [:]
        var current = -1
        var pendingFile = -1
        for line in lines(text) {
            if line.hasPrefix("debug_line[") {
                current = Int(line.dropFirst("debug_line[0x".count).prefix { $0 != "]" }, radix: 16) ?? -1
                tables[current] = LineTable()
                continue
            }
            guard current >= 0 else { continue }
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("version:") {
                tables[current]!.version = Int(trimmed.dropFirst("version:".count).drop { $0 == " " }) ?? 0
            } else if trimmed.hasPrefix("include_directories[") {
                let index = Int(trimmed.dropFirst("include_directories[".count).prefix { $0 != "]" }.drop { $0 == " " }) ?? -1
                tables[current]!.directories[index] = lastQuoted(trimmed) ?? ""
            } else if trimmed.hasPrefix("file_names[") {
                pendingFile = Int(trimmed.dropFirst("file_names[".count).prefix { $0 != "]" }.drop { $0 == " " }) ?? -1
                tables[current]!.files[pendingFile] = ("", 0)
            } else if trimmed.hasPrefix("name:"), pendingFile >= 0 {
                tables[current]!.files[pendingFile]!.name = lastQuoted(trimmed) ?? ""
            } else if trimmed.hasPrefix("dir_index:"), pendingFile >= 0 {
                tables[current]!.files[pendingFile]!.directory = Int(trimmed.dropFirst("dir_index:".count).drop { $0 == " " }) ?? 0
            } else if trimmed.hasPrefix("0x") {
                let fields = trimmed.split(separator: " ")
                guard fields.count >= 4, let address = number(fields[0]), let row = UInt32(fields[1]),
                      let column = UInt32(fields[2]), let file = Int(fields[3]) else { continue }
                tables[current]!.rows.append((address, row, column, file, fields.contains("end_sequence")))
            }
        }
        return tables
    }

    // MARK: Deriving the model

    /// Tags whose children the extractors walk (besides subprograms and inlined subroutines).
    static let descendingTags: Set<String> = [
        "DW_TAG_lexical_block", "DW_TAG_namespace", "DW_TAG_module", "DW_TAG_class_type", "DW_TAG_structure_type",
        "DW_TAG_union_type", "DW_TAG_try_block", "DW_TAG_catch_block", "DW_TAG_interface_type",
    ]

    private mutating func derive(units: [Unit], tables: [Int: LineTable]) {
        var dies: [Int: DIE] = [:]
        for unit in units {
            for die in unit.dies where die.tag == "DW_TAG_subprogram" || die.tag == "DW_TAG_inlined_subroutine" {
                dies[die.offset] = die
            }
        }
        var emittedTables = Set<Int>()
        for unit in units {
            guard let root = unit.dies.first else { continue }
            let skipped = ["DW_UT_type", "DW_UT_skeleton", "DW_UT_split_type"].contains(unit.type)
                || root.tag == "DW_TAG_skeleton_unit" || root.tag == "DW_TAG_type_unit"
                || root.attributes["DW_AT_dwo_name"] != nil || root.attributes["DW_AT_GNU_dwo_name"] != nil
                || root.attributes["DW_AT_GNU_dwo_id"] != nil
            if skipped { continue }
            let compilationDirectory = Self.string(root.attributes["DW_AT_comp_dir"]) ?? ""
            var files: [Int: (llvm: String, model: String)] = [:]
            if let list = root.attributes["DW_AT_stmt_list"], let offset = Self.number(list).map(Int.init),
               let table = tables[offset] {
                for (index, entry) in table.files {
                    files[index] = Self.paths(of: entry, in: table, compilationDirectory: compilationDirectory)
                }
                if emittedTables.insert(offset).inserted { appendRows(of: table, files: files) }
            }
            walk(unit, files: files, dies: dies)
        }
    }

    /// The path llvm-dwarfdump prints for a file entry (llvm's `getFileNameByIndex` with
    /// `AbsoluteFilePath`) and the model's path (`ModelBuilder.joinPath`).
    static func paths(of entry: (name: String, directory: Int), in table: LineTable,
                      compilationDirectory: String) -> (llvm: String, model: String) {
        let directory = table.version >= 5 || entry.directory > 0 ? table.directories[entry.directory] ?? "" : ""
        // The model follows llvm-symbolizer 21: DWARF 5 directory 0 is the compilation directory.
        let model = ModelBuilder.joinPath(compilationDirectory: compilationDirectory, directory: directory, name: entry.name,
                                          directoryIsCompilationDirectory: table.version >= 5 && entry.directory == 0)
        if entry.name.hasPrefix("/") { return (entry.name, model) }
        var llvm = ""
        func append(_ component: String) {
            if component.isEmpty { return }
            if !llvm.isEmpty && !llvm.hasSuffix("/") && !component.hasPrefix("/") { llvm += "/" }
            llvm += component
        }
        // llvm 14 prefixes the compilation directory even to DWARF 5 directory 0 (later versions do not).
        if !directory.hasPrefix("/") { append(compilationDirectory) }
        append(directory)
        append(entry.name)
        return (llvm, model)
    }

    private mutating func appendRows(of table: LineTable, files: [Int: (llvm: String, model: String)]) {
        var sequence: [Row] = []
        for (address, line, column, file, isEnd) in table.rows {
            let path = (table.version < 5 && file == 0) ? "" : files[file]?.model ?? ""
            sequence.append(Row(address: address, path: path, line: line, column: column, isEndSequence: isEnd))
            if isEnd {
                // Sequences of code removed by the linker start at 0 and are dropped.
                if sequence[0].address != 0 { rows += sequence }
                sequence.removeAll()
            }
        }
    }

    private mutating func walk(_ unit: Unit, files: [Int: (llvm: String, model: String)], dies: [Int: DIE]) {
        var stack: [(depth: Int, scope: Int?)] = []
        var skipBelow: Int?
        for die in unit.dies.dropFirst() {
            if let depth = skipBelow {
                if die.depth > depth { continue }
                skipBelow = nil
            }
            while let top = stack.last, top.depth >= die.depth { stack.removeLast() }
            let enclosing = stack.last?.scope
            switch die.tag {
            case "DW_TAG_subprogram":
                if die.attributes["DW_AT_declaration"] != nil {
                    skipBelow = die.depth
                    continue
                }
                let ranges = Self.ranges(of: die)
                var scope: Int?
                if !ranges.isEmpty { scope = add(die, ranges: ranges, parent: -1, files: files, dies: dies) }
                stack.append((die.depth, scope))
            case "DW_TAG_inlined_subroutine":
                guard let enclosing else {
                    skipBelow = die.depth
                    continue
                }
                let ranges = Self.ranges(of: die)
                var scope: Int?
                if !ranges.isEmpty { scope = add(die, ranges: ranges, parent: enclosing, files: files, dies: dies) }
                stack.append((die.depth, scope ?? enclosing))
            case let tag where Self.descendingTags.contains(tag):
                stack.append((die.depth, enclosing))
            default:
                skipBelow = die.depth
            }
        }
    }

    /// Non-empty code ranges: `[low_pc, high_pc)` (llvm-dwarfdump prints high_pc as an address),
    /// else the `DW_AT_ranges` list.
    static func ranges(of die: DIE) -> [AddressRange] {
        if let low = die.attributes["DW_AT_low_pc"].flatMap(number) {
            guard let high = die.attributes["DW_AT_high_pc"].flatMap(number), high > low else { return [] }
            return [AddressRange(start: low, end: high)]
        }
        return die.ranges.filter { $0.end > $0.start }
    }

    private mutating func add(_ die: DIE, ranges: [AddressRange], parent: Int,
                              files: [Int: (llvm: String, model: String)], dies: [Int: DIE]) -> Int? {
        let kept = ranges.filter { $0.start != 0 }
        guard !kept.isEmpty else { return nil }
        let names = Self.names(of: die, dies: dies, depth: 0)
        var callFiles = Set<String>()
        var callLine: UInt32 = 0
        var callColumn: UInt32 = 0
        if parent >= 0 {
            if let file = die.attributes["DW_AT_call_file"] {
                if file.hasPrefix("\"") {
                    let printed = Self.unquote(file)
                    callFiles = Set(files.values.filter { $0.llvm == printed }.map(\.model))
                } else if let index = Self.number(file).map(Int.init), let entry = files[index] {
                    callFiles = [entry.model]
                }
            }
            callLine = die.attributes["DW_AT_call_line"].flatMap(Self.number).map { UInt32(truncatingIfNeeded: $0) } ?? 0
            callColumn = die.attributes["DW_AT_call_column"].flatMap(Self.number).map { UInt32(truncatingIfNeeded: $0) } ?? 0
        }
        scopes.append(Scope(name: names.linkage ?? names.name ?? "", parent: parent, ranges: kept, callFiles: callFiles,
                            callLine: callLine, callColumn: callColumn, offset: die.offset))
        return scopes.count - 1
    }

    /// (linkage name, name) found on the DIE or through its specification, then abstract origin.
    static func names(of die: DIE, dies: [Int: DIE], depth: Int) -> (linkage: String?, name: String?) {
        var linkage = string(die.attributes["DW_AT_linkage_name"]) ?? string(die.attributes["DW_AT_MIPS_linkage_name"])
        var name = string(die.attributes["DW_AT_name"])
        if (linkage == nil || name == nil) && depth < 8 {
            for link in ["DW_AT_specification", "DW_AT_abstract_origin"] {
                guard let value = die.attributes[link], let target = number(value.prefix { $0 != " " }) else { continue }
                let inherited: (linkage: String?, name: String?)
                if let targetDIE = dies[Int(target)] {
                    inherited = names(of: targetDIE, dies: dies, depth: depth + 1)
                } else {
                    // Not a subprogram: take the name llvm-dwarfdump resolved for it.
                    inherited = (nil, lastQuoted(Substring(value)))
                }
                linkage = linkage ?? inherited.linkage
                name = name ?? inherited.name
                if linkage != nil && name != nil { break }
            }
        }
        return (linkage, name)
    }

    // MARK: Text helpers

    /// `0x…` text of an address.
    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

    /// Splits bytes into lines.
    static func lines(_ text: [UInt8]) -> [Substring] {
        String(decoding: text, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
    }

    /// A string attribute's value; nil for strings llvm-dwarfdump cannot show (in a dwz alternate
    /// file: "alt indirect string, offset: …"), which the model treats as absent.
    static func string(_ value: String?) -> String? {
        guard let value, value.hasPrefix("\"") else { return nil }
        return unquote(value)
    }

    /// A decimal or 0x-prefixed hexadecimal number at the start of `text`.
    static func number(_ text: some StringProtocol) -> UInt64? {
        let trimmed = text.drop { $0 == " " || $0 == "(" }
        if trimmed.hasPrefix("0x") {
            return UInt64(trimmed.dropFirst(2).prefix { $0.isHexDigit }, radix: 16)
        }
        return UInt64(trimmed.prefix { $0.isNumber })
    }

    /// The contents of the last "…" in `text`, unescaped.
    static func lastQuoted(_ text: Substring) -> String? {
        guard text.hasSuffix("\""), let open = text.dropLast().lastIndex(of: "\"") else {
            // A quoted string with escaped quotes inside: fall back to the first quote.
            guard let first = text.firstIndex(of: "\""), text.hasSuffix("\"") else { return nil }
            return unquote(String(text[first...]))
        }
        var start = open
        // An escaped quote is not an opening quote: search further left.
        while start > text.startIndex && text[text.index(before: start)] == "\\" {
            guard let earlier = text[..<text.index(before: start)].lastIndex(of: "\"") else { break }
            start = earlier
        }
        return unquote(String(text[start...]))
    }

    /// Removes the quotes and llvm's `write_escaped` escapes (`\\`, `\"`, `\t`, `\n`, octal).
    static func unquote(_ text: String) -> String {
        var bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "\"") { bytes.removeFirst() }
        if bytes.last == UInt8(ascii: "\"") { bytes.removeLast() }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < bytes.count else {
                out.append(byte)
                index += 1
                continue
            }
            let next = bytes[index + 1]
            switch next {
            case UInt8(ascii: "n"): out.append(10); index += 2
            case UInt8(ascii: "t"): out.append(9); index += 2
            case UInt8(ascii: "0")...UInt8(ascii: "7") where index + 3 < bytes.count:
                let digits = bytes[(index + 1)...(index + 3)].map { $0 &- UInt8(ascii: "0") }
                out.append(digits[0] << 6 | digits[1] << 3 | digits[2])
                index += 4
            default: out.append(next); index += 2
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
