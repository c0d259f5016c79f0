import SymBytes
import SymELF
import SymReport
import SymTable

extension ModuleConverter {
    /// The key under which the conversion of `binary` (with `debugFile`) is cached, nil when it
    /// is not cached: the one admission rule of the table cache. Only conversions with DWARF
    /// (cheap symbol-table-only tables are not worth it, and caching one would hide a debug file
    /// installed later), by the built-in decoder (the cache's tables are that decoder's), of
    /// files with a build-id.
    ///
    /// The key is `<build-id>-<identity>`: a build-id alone is what a hostile file copies to
    /// have its table answer for the genuine file, so the key also holds the XXH64 of every byte
    /// of the binary (and `-<XXH64>` of the debug file's): files that differ anywhere never share
    /// a table. (Not a cryptographic hash: a file crafted to collide on 64 bits still could.)
    static func cacheKey(binary: ELFFile, debugFile: ELFFile?, decoder: DWARFDecoder) -> String? {
        guard decoder == .builtin, binary.hasDWARF || (debugFile?.hasDWARF ?? false) else { return nil }
        guard let id = [binary.buildIDHex, debugFile?.buildIDHex].lazy.compactMap({ $0 }).first(where: { !$0.isEmpty }) else {
            return nil
        }
        var key = id + "-" + identityHex(binary.contentHash)
        if let debugFile { key += "-" + identityHex(debugFile.contentHash) }
        return key
    }

    /// `hash` as 16 lowercase hex digits.
    private static func identityHex(_ hash: UInt64) -> String {
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The table of `binary` (with `debugFile`): read from `cache` when it holds the conversion,
    /// else converted here and stored there (when admitted). The candidates say what the cache did.
    static func symbols(binary: ELFFile, debugFile: ELFFile?, decoder: DWARFDecoder, cache: TableCache?,
                        threads: Int) throws(FormatError) -> (symbols: ModuleSymbols, candidates: [SymbolCandidate]) {
        var candidates: [SymbolCandidate] = []
        let key = cacheKey(binary: binary, debugFile: debugFile, decoder: decoder)
        let cache = key == nil ? nil : cache
        if let cache, let key {
            let path = cache.path(for: key)
            switch cache.table(for: key) {
            case .hit(let cached):
                candidates.append(SymbolCandidate(source: .cache, location: path, outcome: .matched(.table, byName: false)))
                return (ModuleSymbols(table: cached.table, cachedPath: path), candidates)
            case .absent:
                candidates.append(SymbolCandidate(source: .cache, location: path, outcome: .absent))
            case .unusable(let error):
                candidates.append(SymbolCandidate(source: .cache, location: path, outcome: .unreadable(reason: "\(error)")))
            }
        }
        let bytes = try table(binary: binary, debugFile: debugFile, decoder: decoder, threads: threads)
        let symbols = ModuleSymbols(table: try SymbolTable(bytes: bytes))
        if let cache, let key {
            do {
                let path = try cache.store(bytes, key: key)
                candidates.append(SymbolCandidate(source: .cache, location: path, outcome: .stored))
            } catch {
                candidates.append(SymbolCandidate(source: .cache, location: "", outcome: .notStored(reason: "\(error)")))
            }
        }
        return (symbols, candidates)
    }
}

extension SymbolCandidate.Source {
    /// The engine's own check of a provider's answer.
    static let answer = SymbolCandidate.Source(rawValue: "answer")
}
