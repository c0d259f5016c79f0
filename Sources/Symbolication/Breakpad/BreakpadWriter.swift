import SymBytes
import SymCore
import SymDemangle
import SymELF
import SymTable
import SymUnwind

/// Writes a module as a Breakpad symbol file (`.sym`, Breakpad `docs/symbol_files.md`): the
/// functions, lines and inlines of the usual conversion (`ModuleConverter.model`), the symbol
/// table for code without DWARF, and `STACK CFI` records from `.eh_frame`/`.debug_frame`.
public enum BreakpadWriter {
    /// Breakpad's module id of a build-id (the minidump reader's rule: `Minidump.Module.debugID`).
    public static func moduleID(buildID: [UInt8]) -> String {
        Minidump.Module.debugID(buildID: buildID)
    }

    /// Breakpad's name of an ELF machine (`MODULE` line).
    public static func architecture(machine: UInt16, is64Bit: Bool) -> String {
        switch machine {
        case 62: return "x86_64"
        case 3: return "x86"
        case 183: return "arm64"
        case 40: return "arm"
        case 8: return is64Bit ? "mips64" : "mips"
        case 21: return "ppc64"
        case 20: return "ppc"
        case 243: return is64Bit ? "riscv64" : "riscv"
        default: return "unknown"
        }
    }

    /// The address Breakpad subtracts from every address of the module: the first `PT_LOAD`'s
    /// `p_vaddr - p_offset` (Breakpad `GetLoadingAddress`), 0 for a file without program headers.
    public static func loadAddress(of file: ELFFile) -> UInt64 {
        let bias = file.loadBias, offset = file.firstLoadFileOffset
        return bias >= offset ? bias - offset : 0
    }

    /// The `.sym` text of `binary` with its optional separate debug file.
    public static func symbolFile(binary: ELFFile, debugFile: ELFFile? = nil, decoder: DWARFDecoder = .builtin,
                                  threads: Int = 1) throws(FormatError) -> String {
        let model = try ModuleConverter.model(binary: binary, debugFile: debugFile, decoder: decoder, threads: threads)
        let cfi = try CallFrameInfo.read(binary: binary, debugFile: debugFile)
        return text(model: model, cfi: cfi, base: loadAddress(of: binary))
    }

    /// The `.sym` text of a model and its call-frame information, addresses less `base`.
    public static func text(model: SymbolModel, cfi: CallFrameInfo, base: UInt64) -> String {
        var out = ""
        let identity = model.module
        let name = identity.name
        out += "MODULE Linux \(architecture(machine: identity.machine, is64Bit: identity.is64Bit)) "
            + "\(moduleID(buildID: identity.buildID)) \(name)\n"
        if !identity.buildID.isEmpty { out += "INFO CODE_ID \(hexString(identity.buildID).uppercased())\n" }
        writeFiles(model, into: &out)
        writeFunctions(model, base: base, into: &out)
        BreakpadCFI.write(cfi.entries, machine: identity.machine, base: base, into: &out)
        return out
    }

    /// `FILE` records, numbered as the model's files (0, the unknown file, only when used).
    static func writeFiles(_ model: SymbolModel, into out: inout String) {
        for (index, file) in model.files.enumerated() where index > 0 {
            out += "FILE \(index) \(path(of: file, in: model))\n"
        }
    }

    static func path(of file: SourceFile, in model: SymbolModel) -> String {
        let name = model.strings[Int(file.name)]
        let directory = model.strings[Int(file.directory)]
        if name.hasPrefix("/") || directory.isEmpty { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// A line of the model: `[start, end)` at `file:line`.
    struct LineSpan {
        var start: UInt64
        var end: UInt64
        var file: UInt32
        var line: UInt32
    }

    /// The line table as sorted spans (each row up to the next row of its sequence).
    static func lineSpans(_ model: SymbolModel) -> [LineSpan] {
        var spans: [LineSpan] = []
        spans.reserveCapacity(model.lines.count)
        var index = 0
        let lines = model.lines
        while index < lines.count {
            let row = lines[index]
            if !row.isEndSequence, index + 1 < lines.count, lines[index + 1].address > row.address {
                spans.append(LineSpan(start: row.address, end: lines[index + 1].address, file: row.file, line: row.line))
            }
            index += 1
        }
        spans.sort { $0.start < $1.start }
        return spans
    }

    /// `INLINE_ORIGIN`, `FUNC` with its `INLINE` and line records, then `PUBLIC` for the symbols
    /// no function covers.
    static func writeFunctions(_ model: SymbolModel, base: UInt64, into out: inout String) {
        let demangler = Demangler()
        let scopes = model.scopes
        // Each inlined scope's physical function and depth below it (parents come first).
        var root = [UInt32](repeating: 0, count: scopes.count)
        var depth = [Int](repeating: 0, count: scopes.count)
        var inlinedOf: [UInt32: [Int]] = [:]
        var originOfName: [UInt32: Int] = [:]
        var origins: [UInt32] = []
        for (index, scope) in scopes.enumerated() {
            if scope.isInlined, Int(scope.parent) < index {
                root[index] = root[Int(scope.parent)]
                depth[index] = depth[Int(scope.parent)] + 1
                inlinedOf[root[index], default: []].append(index)
                if originOfName[scope.name] == nil {
                    originOfName[scope.name] = origins.count
                    origins.append(scope.name)
                }
            } else {
                root[index] = UInt32(index)
            }
        }
        for (index, name) in origins.enumerated() {
            out += "INLINE_ORIGIN \(index) \(demangler.demangleOrSelf(model.strings[Int(name)]))\n"
        }
        let spans = lineSpans(model)
        var functionRanges: [AddressRange] = []
        for (index, scope) in scopes.enumerated() where !scope.isInlined {
            let name = demangler.demangleOrSelf(model.strings[Int(scope.name)])
            for rangeIndex in scope.rangeIndices where rangeIndex < model.ranges.count {
                let range = model.ranges[rangeIndex]
                guard range.start < range.end, range.start >= base else { continue }
                functionRanges.append(range)
                out += "FUNC \(hex(range.start - base)) \(hex(range.end - range.start)) 0 \(name)\n"
                for inlined in inlinedOf[UInt32(index)] ?? [] {
                    let scope = scopes[inlined]
                    let pieces = scope.rangeIndices.compactMap { $0 < model.ranges.count ? model.ranges[$0] : nil }
                        .filter { $0.start < $0.end && $0.start >= range.start && $0.end <= range.end }
                    guard !pieces.isEmpty, let origin = originOfName[scope.name] else { continue }
                    out += "INLINE \(depth[inlined] - 1) \(scope.callLine) \(scope.callFile) \(origin)"
                    for piece in pieces { out += " \(hex(piece.start - base)) \(hex(piece.end - piece.start))" }
                    out += "\n"
                }
                // Line records: the spans inside the range, clipped to it.
                var low = 0, high = spans.count
                while low < high {
                    let middle = (low + high) / 2
                    if spans[middle].end <= range.start { low = middle + 1 } else { high = middle }
                }
                var spanIndex = low
                while spanIndex < spans.count && spans[spanIndex].start < range.end {
                    let span = spans[spanIndex]
                    let start = max(span.start, range.start), end = min(span.end, range.end)
                    if start < end {
                        out += "\(hex(start - base)) \(hex(end - start)) \(span.line) \(span.file)\n"
                    }
                    spanIndex += 1
                }
            }
        }
        let covered = ModuleConverter.physicalRanges(of: model)
        var written = Set<UInt64>()
        for symbol in model.symbols.sorted(by: { $0.address < $1.address })
        where symbol.address >= base && !ModuleConverter.contains(covered, symbol.address) {
            guard written.insert(symbol.address).inserted else { continue }
            out += "PUBLIC \(hex(symbol.address - base)) 0 \(demangler.demangleOrSelf(model.strings[Int(symbol.name)]))\n"
        }
    }

    static func hex(_ value: UInt64) -> String { String(value, radix: 16) }
}
