import SymBytes
import SymDemangle
import SymTable
import Symbolication

/// Writes llvm-symbolizer's answers (LLVM and JSON output styles, LLVM 21's `DIPrinter.cpp`)
/// straight into bytes, like `FrameRenderer`: names and paths are rendered once per distinct
/// table string and module, so an answer costs a table lookup and byte copies.
///
/// The physical frame takes its name (and, when the line table has no file, the `STT_FILE` name)
/// from the module's own ELF symbol table, as llvm-symbolizer does with `--functions=linkage`.
public struct SymbolizerRenderer {
    /// The options answers follow.
    public let options: SymbolizerOptions
    private let demangler = Demangler()
    private var caches: [ObjectIdentifier: Names] = [:]
    private var frames: [Frame] = []

    /// Rendered strings of one module.
    final class Names {
        var functions = FrameRenderer.ByteCache()
        var paths = FrameRenderer.ByteCache()
        var symbols = FrameRenderer.ByteCache()
    }

    /// Creates a renderer.
    public init(options: SymbolizerOptions) {
        self.options = options
        frames.reserveCapacity(64)
    }

    private var isJSON: Bool { options.outputStyle == .json }

    // MARK: Answers

    /// Appends the answer to a CODE request.
    public mutating func renderCode(_ address: UInt64, module: CachedModule, moduleName: String,
                                    into output: inout [UInt8]) throws(FormatError) {
        let table = module.symbols.table
        frames.removeAll(keepingCapacity: true)
        try table.forEachFrame(at: address) { frame in frames.append(frame) }
        let names = self.names(for: module)
        // llvm names the physical frame from the ELF symbol table (linkage names only).
        var override: SymbolizerSymbolTable.Symbol?
        if options.functions == .linkage, let symbols = module.elfSymbols {
            override = symbols.symbol(containing: address)
        }
        if isJSON {
            beginJSON(address: address, into: &output)
            output.append(contentsOf: Literal.jsonModule)
            appendJSONString(moduleName, to: &output)
            output.append(contentsOf: Literal.jsonSymbols)
        } else {
            header(address, into: &output)
        }
        if frames.isEmpty {
            var name: [UInt8] = [], file: [UInt8] = []
            var start: UInt64?
            if let override {
                name = symbolName(override, names: names)
                if let stt = override.file { file = pathBytes(Array(stt.utf8)) }
                start = override.address
            }
            frame(name: name, file: file, line: 0, column: 0, start: start, inlined: false, into: &output)
        } else {
            let last = frames.count - 1
            let shown = options.inlines ? 0...last : 0...0
            for index in shown {
                let location = frames[index]
                let physical = !options.inlines || index == last
                let named = physical ? frames[last] : location
                var name = function(named.function, table: table, names: names)
                var file = path(location.directory, location.file, table: table, names: names)
                var start: UInt64?
                if physical, let override {
                    name = symbolName(override, names: names)
                    if file.isEmpty, let stt = override.file { file = pathBytes(Array(stt.utf8)) }
                    start = override.address
                } else if physical, location.isSymbolOnly, options.functions == .linkage, module.elfSymbols != nil {
                    // Without DWARF llvm names code from the ELF symbol table alone; the table's
                    // last symbol range reaches further than llvm's sized symbols do.
                    name = []
                }
                frame(name: name, file: file, line: location.line, column: location.column, start: start,
                      inlined: index > 0, into: &output)
            }
        }
        if isJSON { output.append(contentsOf: Literal.jsonEnd) } else { output.append(UInt8(ascii: "\n")) }
    }

    /// Appends the answer to a DATA request: the covering ELF symbol, its start and size, and the
    /// `STT_FILE` name of a local symbol (line 0: the `.csym` table keeps no variables).
    public mutating func renderData(_ address: UInt64, module: CachedModule?, moduleName: String,
                                    into output: inout [UInt8]) {
        let symbol = module?.elfSymbols?.symbol(containing: address)
        if isJSON {
            beginJSON(address: address, into: &output)
            output.append(contentsOf: Literal.jsonData)
            if let symbol { output.append(contentsOf: displayName(Array(symbol.name.utf8), shortened: false)) }
            output.append(contentsOf: Literal.jsonSize)
            appendHex(symbol?.size ?? 0, to: &output)
            output.append(contentsOf: Literal.jsonStart)
            appendHex(symbol?.address ?? 0, to: &output)
            output.append(contentsOf: Literal.jsonDataEnd)
            appendJSONString(moduleName, to: &output)
            output.append(contentsOf: Literal.jsonObjectEnd)
            return
        }
        header(address, into: &output)
        if let symbol {
            output.append(contentsOf: displayName(Array(symbol.name.utf8), shortened: false))
        } else {
            output.append(contentsOf: SymbolizerStrings.unknown)
        }
        output.append(UInt8(ascii: "\n"))
        appendDecimal(symbol?.address ?? 0, to: &output)
        output.append(UInt8(ascii: " "))
        appendDecimal(symbol?.size ?? 0, to: &output)
        output.append(UInt8(ascii: "\n"))
        if let file = symbol?.file {
            output.append(contentsOf: pathBytes(Array(file.utf8)))
            output.append(contentsOf: Literal.lineZero)
        } else {
            output.append(contentsOf: Literal.unknownDeclaration)
        }
        output.append(contentsOf: Literal.blankLine)
    }

    /// Appends the answer to a FRAME request (the locals of the frames at `address`): the tables
    /// keep no local variables, so it is llvm-symbolizer's answer for code without them.
    public mutating func renderFrame(_ address: UInt64, moduleName: String, into output: inout [UInt8]) {
        if isJSON {
            beginJSON(address: address, into: &output)
            output.append(contentsOf: Literal.jsonNoLocals)
            appendJSONString(moduleName, to: &output)
            output.append(contentsOf: Literal.jsonObjectEnd)
            return
        }
        header(address, into: &output)
        output.append(contentsOf: SymbolizerStrings.unknown)
        output.append(contentsOf: SymbolizerStrings.newline)
        output.append(contentsOf: Literal.blankLine)
    }

    /// Appends the answer for a request that could not be answered: an unreadable module
    /// (`message` set: JSON then carries it) or a line that is not a request (`address` nil).
    public mutating func renderUnknown(_ kind: SymbolizerRequest.Kind, address: UInt64?, moduleName: String,
                                       message: String? = nil, into output: inout [UInt8]) {
        if kind == .data {
            renderData(address ?? 0, module: nil, moduleName: moduleName, into: &output)
            return
        }
        if kind == .frame && !(isJSON && message != nil) {
            renderFrame(address ?? 0, moduleName: moduleName, into: &output)
            return
        }
        if isJSON {
            if let address { beginJSON(address: address, into: &output) } else { output.append(UInt8(ascii: "{")) }
            if let message, address != nil {
                output.append(contentsOf: Literal.jsonError)
                appendJSONString(message, to: &output)
                output.append(contentsOf: Literal.jsonErrorEnd)
                appendJSONString(moduleName, to: &output)
                output.append(contentsOf: Literal.jsonObjectEnd)
                return
            }
            output.append(contentsOf: Literal.jsonModule)
            appendJSONString(moduleName, to: &output)
            output.append(contentsOf: Literal.jsonSymbols)
        } else if let address {
            header(address, into: &output)
        }
        frame(name: [], file: [], line: 0, column: 0, start: nil, inlined: false, into: &output)
        if isJSON { output.append(contentsOf: Literal.jsonEnd) } else { output.append(UInt8(ascii: "\n")) }
    }

    // MARK: Pieces

    private func header(_ address: UInt64, into output: inout [UInt8]) {
        guard options.printAddress else { return }
        output.append(contentsOf: SymbolizerStrings.hexPrefix)
        appendHex(address, to: &output)
        output.append(contentsOf: options.pretty ? SymbolizerStrings.colon : SymbolizerStrings.newline)
    }

    private func beginJSON(address: UInt64, into output: inout [UInt8]) {
        output.append(contentsOf: Literal.jsonAddress)
        appendHex(address, to: &output)
        output.append(contentsOf: Literal.jsonAddressEnd)
    }

    /// One frame; empty `name`/`file` mean unknown.
    private func frame(name: [UInt8], file: [UInt8], line: UInt32, column: UInt32, start: UInt64?,
                       inlined: Bool, into output: inout [UInt8]) {
        if isJSON {
            if inlined { output.append(UInt8(ascii: ",")) }
            output.append(contentsOf: Literal.jsonColumn)
            appendDecimal(UInt64(column), to: &output)
            output.append(contentsOf: Literal.jsonFile)
            output.append(contentsOf: file)
            output.append(contentsOf: Literal.jsonFunction)
            if options.functions != .none { output.append(contentsOf: name) }
            output.append(contentsOf: Literal.jsonLine)
            appendDecimal(UInt64(line), to: &output)
            output.append(contentsOf: Literal.jsonStartAddress)
            if let start {
                output.append(contentsOf: SymbolizerStrings.hexPrefix)
                appendHex(start, to: &output)
            }
            output.append(contentsOf: Literal.jsonFrameEnd)
            return
        }
        if options.functions != .none {
            if options.pretty && inlined { output.append(contentsOf: SymbolizerStrings.inlinedBy) }
            output.append(contentsOf: name.isEmpty ? SymbolizerStrings.unknown : name)
            output.append(contentsOf: options.pretty ? SymbolizerStrings.at : SymbolizerStrings.newline)
        }
        output.append(contentsOf: file.isEmpty ? SymbolizerStrings.unknown : file)
        output.append(UInt8(ascii: ":"))
        appendDecimal(UInt64(line), to: &output)
        output.append(UInt8(ascii: ":"))
        appendDecimal(UInt64(column), to: &output)
        output.append(UInt8(ascii: "\n"))
    }

    private mutating func names(for module: CachedModule) -> Names {
        if let names = caches[ObjectIdentifier(module)] { return names }
        let names = Names()
        caches[ObjectIdentifier(module)] = names
        return names
    }

    private func function(_ reference: StringRef, table: SymbolTable, names: Names) -> [UInt8] {
        let key = SymbolizerStrings.key(reference)
        if let cached = names.functions.value(key) { return cached }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        let bytes = displayName(raw)
        names.functions.store(key, bytes)
        return bytes
    }

    private func symbolName(_ symbol: SymbolizerSymbolTable.Symbol, names: Names) -> [UInt8] {
        if let cached = names.symbols.value(symbol.address) { return cached }
        let bytes = displayName(Array(symbol.name.utf8))
        names.symbols.store(symbol.address, bytes)
        return bytes
    }

    /// A name as printed: demangled (C++ and Rust; llvm-symbolizer leaves Swift names alone),
    /// shortened for `--functions=short`, escaped for JSON.
    func displayName(_ raw: [UInt8], shortened: Bool = true) -> [UInt8] {
        guard !raw.isEmpty else { return [] }
        var name = raw
        if options.demangle && FrameRenderer.mayBeMangled(raw) {
            let text = String(decoding: raw, as: UTF8.self)
            switch Demangler.scheme(of: text) {
            case .swift:
                break
            case .itanium:
                if let demangled = SymbolizerDemangling.demangleLLVMStyle(raw) { name = demangled }
            case .rustLegacy:
                // llvm-symbolizer reads legacy Rust names as plain Itanium ones (`$LT$`, hash kept).
                if let demangled = SymbolizerDemangling.rustLegacyAsItanium(raw) { name = demangled }
            case .rustV0:
                var head = raw[...], suffix: ArraySlice<UInt8> = []
                if let dot = raw.firstIndex(of: UInt8(ascii: ".")) { head = raw[..<dot]; suffix = raw[dot...] }
                if let demangled = demangler.demangle(String(decoding: head, as: UTF8.self)) {
                    name = Array(demangled.utf8)
                    if !suffix.isEmpty { name += Array(" (".utf8) + suffix + [UInt8(ascii: ")")] }
                }
            default:
                if let demangled = demangler.demangle(text) { name = Array(demangled.utf8) }
            }
        }
        if shortened && options.functions == .short { name = Self.shortName(name) }
        return isJSON ? Self.jsonEscaped(name) : name
    }

    /// The unqualified name without parameters (`ns::Type::run(int) const` → `run`), what
    /// DW_AT_name holds and llvm prints for `--functions=short`.
    static func shortName(_ name: [UInt8]) -> [UInt8] {
        var end = name.count
        // Drop a trailing parameter list (and qualifiers after it), matching parentheses.
        if let close = name.lastIndex(of: UInt8(ascii: ")")) {
            var depth = 0, index = close
            while index >= 0 {
                if name[index] == UInt8(ascii: ")") { depth += 1 }
                if name[index] == UInt8(ascii: "(") { depth -= 1; if depth == 0 { break } }
                index -= 1
            }
            if index > 0 { end = index }
        }
        // The last `::` outside template arguments.
        var depth = 0, start = 0, index = end - 1
        while index > 0 {
            let byte = name[index]
            if byte == UInt8(ascii: ">") { depth += 1 }
            if byte == UInt8(ascii: "<") { depth -= 1 }
            if depth == 0 && byte == UInt8(ascii: ":") && name[index - 1] == UInt8(ascii: ":") { start = index + 1; break }
            index -= 1
        }
        return Array(name[start..<end])
    }

    private func path(_ directory: StringRef, _ file: StringRef, table: SymbolTable, names: Names) -> [UInt8] {
        SymbolizerStrings.path(table, directory, file, cache: &names.paths, render: pathBytes)
    }

    /// A path as printed: its last component with `--basenames`, escaped for JSON.
    private func pathBytes(_ path: [UInt8]) -> [UInt8] {
        let bytes = options.basenames ? SymbolizerStrings.baseName(path) : path
        return isJSON ? Self.jsonEscaped(bytes) : bytes
    }

    private func appendJSONString(_ text: String, to output: inout [UInt8]) {
        output.append(contentsOf: Self.jsonEscaped(Array(text.utf8)))
    }

    /// JSON string contents as llvm's `json::OStream` writes them.
    static func jsonEscaped(_ text: [UInt8]) -> [UInt8] {
        guard needsJSONEscaping(text) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 8)
        appendJSONEscaped(text, to: &out)
        return out
    }


    /// Output fragments as bytes, made once.
    private enum Literal {
        static let lineZero = Array(":0\n".utf8)
        static let unknownDeclaration = Array("??:?\n".utf8)
        static let blankLine = Array("\n".utf8)
        static let jsonAddress = Array("{\"Address\":\"0x".utf8)
        static let jsonAddressEnd = Array("\",".utf8)
        static let jsonModule = Array("\"ModuleName\":\"".utf8)
        static let jsonSymbols = Array("\",\"Symbol\":[".utf8)
        static let jsonColumn = Array("{\"Column\":".utf8)
        static let jsonFile = Array(",\"Discriminator\":0,\"FileName\":\"".utf8)
        static let jsonFunction = Array("\",\"FunctionName\":\"".utf8)
        static let jsonLine = Array("\",\"Line\":".utf8)
        static let jsonStartAddress = Array(",\"StartAddress\":\"".utf8)
        static let jsonFrameEnd = Array("\",\"StartFileName\":\"\",\"StartLine\":0}".utf8)
        static let jsonEnd = Array("]}\n".utf8)
        static let jsonData = Array("\"Data\":{\"Name\":\"".utf8)
        static let jsonSize = Array("\",\"Size\":\"0x".utf8)
        static let jsonStart = Array("\",\"Start\":\"0x".utf8)
        static let jsonDataEnd = Array("\"},\"ModuleName\":\"".utf8)
        static let jsonError = Array("\"Error\":{\"Message\":\"".utf8)
        static let jsonErrorEnd = Array("\"},\"ModuleName\":\"".utf8)
        static let jsonObjectEnd = Array("\"}\n".utf8)
        static let jsonNoLocals = Array("\"Frame\":[],\"ModuleName\":\"".utf8)
    }
}
