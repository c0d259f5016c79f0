import SymBytes
import SymDemangle
import SymReport
import SymTable
import Synchronization

/// Source locations of one module's table, with demangled names and joined paths made once per
/// distinct string: reports repeat the same functions and files, so a frame costs a table lookup
/// and a few dictionary hits, not a demangling.
final class LocationCache: Sendable {
    let symbols: ModuleSymbols
    private let demangler = Demangler()
    private let names = Mutex<[StringRef: (function: String, mangled: String)]>([:])
    private let paths = Mutex<[PathKey: String]>([:])

    private struct PathKey: Hashable {
        var directory: StringRef
        var file: StringRef
    }

    init(symbols: ModuleSymbols) {
        self.symbols = symbols
    }

    /// The locations at `address`, innermost first, physical function last.
    func locations(at address: UInt64) throws(FormatError) -> [SourceLocation] {
        let table = symbols.table
        var result: [SourceLocation] = []
        try table.forEachFrame(at: address) { (frame) throws(FormatError) in
            let name = self.name(frame.function, in: table)
            result.append(SourceLocation(function: name.function, mangled: name.mangled,
                                         file: path(frame.directory, frame.file, in: table),
                                         line: frame.line, column: frame.column))
        }
        return result
    }

    private func name(_ reference: StringRef, in table: SymbolTable) -> (function: String, mangled: String) {
        if let known = names.withLock({ $0[reference] }) { return known }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        let mangled = String(decoding: raw, as: UTF8.self)
        let function = mangled.isEmpty ? "??" : FrameRenderer.mayBeMangled(raw) ? demangler.demangleOrSelf(mangled) : mangled
        names.withLock { $0[reference] = (function, mangled) }
        return (function, mangled)
    }

    private func path(_ directory: StringRef, _ file: StringRef, in table: SymbolTable) -> String {
        let key = PathKey(directory: directory, file: file)
        if let known = paths.withLock({ $0[key] }) { return known }
        let joined = ModuleSymbols.sourcePath(directory: table.string(directory), file: table.string(file))
        paths.withLock { $0[key] = joined }
        return joined
    }
}
