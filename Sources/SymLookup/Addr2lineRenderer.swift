import SymBytes
import SymDemangle
import SymELF
import SymTable
import Symbolication

/// Writes GNU binutils `addr2line` answers (binutils 2.40 `addr2line.c` `translate_addresses`)
/// straight into bytes: `-f` function names, `-i` inlined frames, `-C` demangling, `-a`
/// addresses, `-p` one line per address, `-s` base names; `??:0` for unknown addresses, `?` for
/// line 0.
///
/// Code with no DWARF is named from the ELF symbol table the way BFD does (`elf_find_function`):
/// the nearest function symbol at or before the address in the same section, with the
/// `STT_FILE` name that precedes a local symbol.
public struct Addr2lineRenderer {
    /// The output switches.
    public struct Options: Sendable, Equatable {
        /// `-f`: function names.
        public var functions = false
        /// `-i`: inlined frames.
        public var inlines = false
        /// `-C`: demangle.
        public var demangle = false
        /// `-a`: the address first.
        public var addresses = false
        /// `-p`: one line per address.
        public var pretty = false
        /// `-s`: file base names.
        public var basenames = false

        /// Creates the defaults (all off, as binutils).
        public init() {}
    }

    /// The switches.
    public let options: Options
    private let module: CachedModule
    private let table: SymbolTable
    private let symbols: Addr2lineSymbols?
    private let demangler = Demangler()
    private let names = Names()
    private var frames: [Frame] = []
    private let addressDigits: Int
    /// Symbol addresses by name, for `symbol+offset` input; made on first use.
    private var symbolAddresses: [String: UInt64]?

    /// Rendered names and paths of the module, by table reference.
    final class Names {
        var functions = FrameRenderer.ByteCache()
        var paths = FrameRenderer.ByteCache()
    }

    /// Creates a renderer for one module.
    public init(module: CachedModule, options: Options) {
        self.options = options
        self.module = module
        table = module.symbols.table
        symbols = module.binary.flatMap { try? Addr2lineSymbols(file: $0) }
        addressDigits = table.module.is64Bit ? 16 : 8
    }

    /// Appends the answer for `address`.
    public mutating func render(_ address: UInt64, into output: inout [UInt8]) throws(FormatError) {
        // A 32-bit file has 32-bit addresses: binutils reads and prints the low 32 bits.
        let address = addressDigits == 8 ? address & 0xffff_ffff : address
        if options.addresses {
            output.append(contentsOf: SymbolizerStrings.hexPrefix)
            // `bfd_printf_vma`: zero-padded to the address size (a wider value prints whole).
            let digits = max(1, (64 - address.leadingZeroBitCount + 3) / 4)
            if digits < addressDigits {
                output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: addressDigits - digits))
            }
            appendHex(address, to: &output)
            output.append(contentsOf: options.pretty ? SymbolizerStrings.colon : SymbolizerStrings.newline)
        }
        frames.removeAll(keepingCapacity: true)
        try table.forEachFrame(at: address) { frame in frames.append(frame) }
        if frames.isEmpty || frames[0].isSymbolOnly {
            // No DWARF function here: BFD's symbol-table answer, else the table's symbol, else
            // unknown. With the ELF file at hand its symbol table decides alone (addresses outside
            // any section are unknown to BFD even where the table's last symbol range reaches).
            // Line-tables-only code (clang -gline-tables-only, -g1) has no function entries but
            // line rows: the frame the table gives (the same chain `lookup` and the llvm-symbolizer
            // drop-in print) carries file:line, which BFD prints beside the symbol's name.
            var lineFile: [UInt8]?, lineNumber: UInt32 = 0
            if let symbolOnly = frames.first, symbolOnly.line != 0 {
                let file = path(symbolOnly.directory, symbolOnly.file)
                lineFile = file.isEmpty ? nil : file
                lineNumber = symbolOnly.line
            }
            if let symbols {
                if let symbol = symbols.function(containing: address) {
                    line(name: displayName(Array(symbol.name.utf8)),
                         file: lineFile ?? symbol.file.map { pathBytes(Array($0.utf8)) }, line: lineNumber, into: &output)
                    return
                }
            } else if let symbolOnly = frames.first {
                line(name: function(symbolOnly.function, physical: false), file: lineFile, line: lineNumber, into: &output)
                return
            }
            if options.functions { output.append(contentsOf: options.pretty ? Literal.unknownPretty : Literal.unknownLine) }
            output.append(contentsOf: Literal.unknownLocation)
            return
        }
        let last = options.inlines ? frames.count - 1 : 0
        for index in 0...last {
            let frame = frames[index]
            if index > 0 && options.pretty { output.append(contentsOf: SymbolizerStrings.inlinedBy) }
            let file = path(frame.directory, frame.file)
            // The physical frame as BFD names it (`bfdName`), inlined frames by their DWARF name.
            let physical = index == frames.count - 1
            let name = function(physical ? bfdName(frame) : frame.function, physical: physical)
            line(name: name, file: file.isEmpty ? nil : file, line: frame.line, into: &output)
        }
    }

    /// The name BFD gives a physical frame: the DWARF function's (`scopeFunction`, which the
    /// covering symbol's may replace in `function`: DWARF subprogram first among aliases, else
    /// the symbol, as `lookup` prints), except that BFD takes a function without a linkage name in
    /// a language that mangles (C++ templates of lambdas) by its ELF symbol (dwarf2.c,
    /// `_bfd_dwarf2_find_nearest_line`: `!function->is_linkage`): a plain DWARF name under a
    /// mangled symbol gives the symbol. C names are linkage names to BFD (`non_mangled`).
    private func bfdName(_ frame: Frame) -> StringRef {
        guard frame.scopeFunction != frame.function, !frame.scopeFunction.isEmpty else { return frame.function }
        var plainDWARFName = false, mangledSymbol = false
        table.withUTF8(frame.scopeFunction) { plainDWARFName = !FrameRenderer.mayBeMangled($0) }
        table.withUTF8(frame.function) { mangledSymbol = FrameRenderer.mayBeMangled($0) }
        return plainDWARFName && mangledSymbol ? frame.function : frame.scopeFunction
    }

    private func line(name: [UInt8], file: [UInt8]?, line: UInt32, into output: inout [UInt8]) {
        if options.functions {
            output.append(contentsOf: name.isEmpty ? SymbolizerStrings.unknown : name)
            output.append(contentsOf: options.pretty ? SymbolizerStrings.at : SymbolizerStrings.newline)
        }
        output.append(contentsOf: file ?? SymbolizerStrings.unknown)
        output.append(UInt8(ascii: ":"))
        if line == 0 {
            output.append(UInt8(ascii: "?"))
        } else {
            appendDecimal(UInt64(line), to: &output)
        }
        output.append(UInt8(ascii: "\n"))
    }

    private mutating func function(_ reference: StringRef, physical: Bool) -> [UInt8] {
        let key = SymbolizerStrings.key(reference) | (physical ? 1 << 63 : 0)
        if let cached = names.functions.value(key) { return cached }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        // BFD uses the DWARF name, which lacks gcc's clone suffixes (`main.cold` is part of
        // `main`); tables written before conversion 11 keep only the ELF symbol's name there.
        if physical { raw = Self.withoutCloneSuffix(raw) }
        let bytes = displayName(raw)
        names.functions.store(key, bytes)
        return bytes
    }

    /// `name` without a trailing gcc clone suffix (`.cold`, `.part.N`, `.isra.N`, `.constprop.N`,
    /// `.lto_priv.N`, `.localalias`), repeated.
    static func withoutCloneSuffix(_ name: [UInt8]) -> [UInt8] {
        let suffixes = ["cold", "part", "isra", "constprop", "lto_priv", "localalias"].map { Array($0.utf8) }
        var end = name.count
        while true {
            var cut = end
            // Skip a trailing `.N`.
            var index = cut - 1
            while index > 0 && name[index] >= UInt8(ascii: "0") && name[index] <= UInt8(ascii: "9") { index -= 1 }
            if index < cut - 1 && index > 0 && name[index] == UInt8(ascii: ".") { cut = index }
            guard let dot = name[..<cut].lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return Array(name[..<end]) }
            let word = Array(name[(dot + 1)..<cut])
            guard suffixes.contains(word) else { return Array(name[..<end]) }
            end = dot
        }
    }

    /// A name as binutils prints it: demangled with `-C` (C++ and Rust; not Swift).
    private func displayName(_ raw: [UInt8]) -> [UInt8] {
        guard options.demangle, FrameRenderer.mayBeMangled(raw) else { return raw }
        let text = String(decoding: raw, as: UTF8.self)
        guard Demangler.scheme(of: text) != .swift, let demangled = demangler.demangle(text) else { return raw }
        return Array(demangled.utf8)
    }

    private func path(_ directory: StringRef, _ file: StringRef) -> [UInt8] {
        SymbolizerStrings.path(table, directory, file, cache: &names.paths, render: pathBytes)
    }

    private func pathBytes(_ path: [UInt8]) -> [UInt8] {
        options.basenames ? SymbolizerStrings.baseName(path) : path
    }

    /// The address a line of input names, as binutils 2.40 reads it: a hex number (white
    /// space, `0x` when a hex digit follows, hex digits up to the first other character, all ones
    /// on overflow); a line that starts with no hex digit or holds a `+` is read as
    /// `symbol[+offset]` instead (the offset in C notation; 0 when no symbol has that name).
    public mutating func address(of line: UnsafeRawBufferPointer) -> UInt64 {
        var start = 0
        while start < line.count, Self.isSpace(line[start]) { start += 1 }
        var index = start
        if index + 2 < line.count, line[index] == UInt8(ascii: "0"), line[index + 1] | 0x20 == UInt8(ascii: "x"),
           Self.hexDigit(line[index + 2]) != nil {
            index += 2
        }
        var value: UInt64 = 0
        var overflow = false, digits = false
        while index < line.count, let digit = Self.hexDigit(line[index]) {
            if value >> 60 != 0 { overflow = true }
            value = value << 4 | digit
            index += 1
            digits = true
        }
        if overflow { value = UInt64.max }
        var plus = start
        while plus < line.count && line[plus] != UInt8(ascii: "+") { plus += 1 }
        // A symbol is looked up when the line starts with no hex digit or holds a `+`
        // (`fibonacci` alone reads as 0xf, `fibonacci+0` as the symbol).
        if digits && plus == line.count { return value }
        // The name ends at white space or the `+`; an offset counts only right after the name.
        var nameEnd = start
        while nameEnd < plus, !Self.isSpace(line[nameEnd]) { nameEnd += 1 }
        if nameEnd < plus { plus = line.count }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<nameEnd]), as: UTF8.self)
        if symbolAddresses == nil {
            var addresses: [String: UInt64] = ["": 0]
            if let binary = module.binary, let all = try? binary.symbols() {
                let statics = all.filter { !$0.isDynamic }
                for symbol in (statics.isEmpty ? all : statics) where symbol.type != ELF.STT_SECTION {
                    if addresses[symbol.name] == nil { addresses[symbol.name] = symbol.value }
                }
            }
            symbolAddresses = addresses
        }
        guard let base = symbolAddresses?[name] else { return 0 }
        let offset = plus < line.count ? Self.scanUnsigned(UnsafeRawBufferPointer(rebasing: line[(plus + 1)...]), base: 0) : 0
        return base &+ offset
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0d).contains(byte)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt64(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt64(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// C's `strtoul` on 64 bits: white space, a sign (a minus negates), `0x` for base 16 or 0, a
    /// leading `0` meaning octal for base 0; all ones on overflow; 0 without digits.
    static func scanUnsigned(_ bytes: UnsafeRawBufferPointer, base: UInt64) -> UInt64 {
        var index = 0
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        var radix = base
        let hasHexPrefix = index + 2 < bytes.count && bytes[index] == UInt8(ascii: "0")
            && bytes[index + 1] | 0x20 == UInt8(ascii: "x") && hexDigit(bytes[index + 2]) != nil
        if (radix == 16 || radix == 0) && hasHexPrefix {
            radix = 16
            index += 2
        } else if radix == 0 {
            radix = index < bytes.count && bytes[index] == UInt8(ascii: "0") ? 8 : 10
        }
        var value: UInt64 = 0
        var overflow = false
        while index < bytes.count, let digit = hexDigit(bytes[index]), digit < radix {
            let (shifted, carry1) = value.multipliedReportingOverflow(by: radix)
            let (sum, carry2) = shifted.addingReportingOverflow(digit)
            if carry1 || carry2 { overflow = true }
            value = sum
            index += 1
        }
        if overflow { return UInt64.max }
        return negative ? 0 &- value : value
    }

    /// Output fragments as bytes, made once.
    private enum Literal {
        static let unknownPretty = Array("?? ".utf8)
        static let unknownLine = Array("??\n".utf8)
        static let unknownLocation = Array("??:0\n".utf8)
    }
}
