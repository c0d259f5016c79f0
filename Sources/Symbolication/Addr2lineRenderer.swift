import SymBytes
import SymDemangle
import SymELF
import SymTable

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
    private var functions = FrameRenderer.ByteCache()
    private var paths = FrameRenderer.ByteCache()
    private var frames: [Frame] = []
    private let addressDigits: Int

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
        if options.addresses {
            output.append(contentsOf: Literal.hexPrefix)
            var digits: [UInt8] = []
            FrameRenderer.appendHex(address, to: &digits)
            if digits.count < addressDigits {
                output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: addressDigits - digits.count))
            }
            output.append(contentsOf: digits)
            output.append(contentsOf: options.pretty ? Literal.colon : Literal.newline)
        }
        frames.removeAll(keepingCapacity: true)
        try table.forEachFrame(at: address) { frame in frames.append(frame) }
        if frames.isEmpty || frames[0].isSymbolOnly {
            // No DWARF here: BFD's symbol-table answer, else the table's symbol, else unknown.
            // With the ELF file at hand its symbol table decides alone (addresses outside any
            // section are unknown to BFD even where the table's last symbol range reaches).
            if let symbols {
                if let symbol = symbols.function(containing: address) {
                    line(name: displayName(Array(symbol.name.utf8)), file: symbol.file.map { pathBytes(Array($0.utf8)) },
                         line: 0, into: &output)
                    return
                }
            } else if let symbolOnly = frames.first {
                line(name: function(symbolOnly.function, physical: false), file: nil, line: 0, into: &output)
                return
            }
            if options.functions { output.append(contentsOf: options.pretty ? Literal.unknownPretty : Literal.unknownLine) }
            output.append(contentsOf: Literal.unknownLocation)
            return
        }
        let last = options.inlines ? frames.count - 1 : 0
        for index in 0...last {
            let frame = frames[index]
            if index > 0 && options.pretty { output.append(contentsOf: Literal.inlinedBy) }
            let file = path(frame.directory, frame.file)
            // BFD names the first lookup of a DWARF function without a linkage name (C++ lambdas,
            // some templates) after the ELF symbol instead, and later ones after the DWARF name
            // (dwarf2.c caches it): the DWARF name is the stable answer.
            let name = function(frame.function, physical: index == frames.count - 1)
            line(name: name, file: file.isEmpty ? nil : file, line: frame.line, into: &output)
        }
    }

    private func line(name: [UInt8], file: [UInt8]?, line: UInt32, into output: inout [UInt8]) {
        if options.functions {
            output.append(contentsOf: name.isEmpty ? Literal.unknown : name)
            output.append(contentsOf: options.pretty ? Literal.at : Literal.newline)
        }
        output.append(contentsOf: file ?? Literal.unknown)
        output.append(UInt8(ascii: ":"))
        if line == 0 {
            output.append(UInt8(ascii: "?"))
        } else {
            FrameRenderer.appendDecimal(UInt64(line), to: &output)
        }
        output.append(UInt8(ascii: "\n"))
    }

    private mutating func function(_ reference: StringRef, physical: Bool) -> [UInt8] {
        let key = SymbolizerStrings.key(reference) | (physical ? 1 << 63 : 0)
        if let cached = functions.value(key) { return cached }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        // The table names a physical frame after its ELF symbol; BFD uses the DWARF name, which
        // lacks gcc's clone suffixes (`main.cold` is part of `main`).
        if physical { raw = Self.withoutCloneSuffix(raw) }
        let bytes = displayName(raw)
        functions.store(key, bytes)
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

    private mutating func path(_ directory: StringRef, _ file: StringRef) -> [UInt8] {
        let key = SymbolizerStrings.key(directory, file)
        if let cached = paths.value(key) { return cached }
        let bytes = pathBytes(SymbolizerStrings.joinedPath(table, directory, file))
        paths.store(key, bytes)
        return bytes
    }

    private func pathBytes(_ path: [UInt8]) -> [UInt8] {
        options.basenames ? SymbolizerStrings.baseName(path) : path
    }

    /// binutils' `bfd_scan_vma(string, NULL, 16)`: leading white space, an optional `0x`, hex
    /// digits up to the first other character; no digits gives 0, overflow gives all ones.
    public static func parseAddress(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var index = 0
        while index < bytes.count, bytes[index] == 0x20 || (0x09...0x0d).contains(bytes[index]) { index += 1 }
        if index + 1 < bytes.count, bytes[index] == UInt8(ascii: "0"), bytes[index + 1] | 0x20 == UInt8(ascii: "x") {
            index += 2
        }
        var value: UInt64 = 0
        var overflow = false
        while index < bytes.count {
            let byte = bytes[index]
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return overflow ? UInt64.max : value
            }
            if value >> 60 != 0 { overflow = true }
            value = value << 4 | digit
            index += 1
        }
        return overflow ? UInt64.max : value
    }

    /// Output fragments as bytes, made once.
    private enum Literal {
        static let hexPrefix = Array("0x".utf8)
        static let unknown = Array("??".utf8)
        static let newline = Array("\n".utf8)
        static let colon = Array(": ".utf8)
        static let at = Array(" at ".utf8)
        static let inlinedBy = Array(" (inlined by) ".utf8)
        static let unknownPretty = Array("?? ".utf8)
        static let unknownLine = Array("??\n".utf8)
        static let unknownLocation = Array("??:0\n".utf8)
    }
}
