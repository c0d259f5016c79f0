import SymBytes
import SymDemangle
import SymReport
import SymTable
import Synchronization

/// Source locations of one module's table, with demangled names and joined paths made once per
/// distinct string, and whole answers kept per looked-up address: reports repeat the same
/// functions, files and return addresses, so a frame costs a table lookup and a few cache hits,
/// not a demangling — or, for an address seen before, no lookup at all.
///
/// The caches are direct-mapped (a slot per hashed key, a collision only costs recomputing): no
/// `Dictionary` hashing per frame, and bounded memory whatever the reports hold.
final class LocationCache: Sendable {
    let symbols: ModuleSymbols
    private let demangler = Demangler()
    private let names = Mutex(Slots<(function: String, mangled: String)>(bits: 12))
    private let paths = Mutex(Slots<String>(bits: 10))
    private let answers = Mutex(Slots<[SourceLocation]>(bits: 12))

    init(symbols: ModuleSymbols) {
        self.symbols = symbols
    }

    /// The locations at `address`, innermost first, physical function last.
    func locations(at address: UInt64) throws(FormatError) -> [SourceLocation] {
        if let known = answers.withLock({ $0.value(address) }) { return known }
        let table = symbols.table
        var result: [SourceLocation] = []
        try table.forEachFrame(at: address) { (frame) throws(FormatError) in
            let name = self.name(frame.function, in: table)
            result.append(SourceLocation(function: name.function, mangled: name.mangled,
                                         file: path(frame.directory, frame.file, in: table),
                                         line: frame.line, column: frame.column))
        }
        answers.withLock { $0.store(address, result) }
        return result
    }

    private func name(_ reference: StringRef, in table: SymbolTable) -> (function: String, mangled: String) {
        let key = UInt64(reference.offset) << 32 | UInt64(reference.length)
        if let known = names.withLock({ $0.value(key) }) { return known }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        let mangled = String(decoding: raw, as: UTF8.self)
        let function = mangled.isEmpty ? "??" : FrameRenderer.mayBeMangled(raw) ? demangler.demangleOrSelf(mangled) : mangled
        names.withLock { $0.store(key, (function, mangled)) }
        return (function, mangled)
    }

    private func path(_ directory: StringRef, _ file: StringRef, in table: SymbolTable) -> String {
        // Offsets into the string data fit 32 bits each; a reference's offset names its string.
        let key = UInt64(directory.offset) << 32 | UInt64(file.offset)
        if let known = paths.withLock({ $0.value(key) }) { return known }
        let joined = ModuleSymbols.sourcePath(directory: table.string(directory), file: table.string(file))
        paths.withLock { $0.store(key, joined) }
        return joined
    }
}

/// A direct-mapped cache from 64-bit keys to values: `1 << bits` slots (allocated on the first
/// store, so a module asked once costs little), a key's slot chosen by a multiplicative hash;
/// storing over an occupied slot evicts its value.
struct Slots<Value> {
    private var keys: [UInt64] = []
    private var values: [Value?] = []
    private let bits: Int

    init(bits: Int) {
        self.bits = bits
    }

    private func slot(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - bits))
    }

    func value(_ key: UInt64) -> Value? {
        guard !keys.isEmpty else { return nil }
        let slot = slot(key)
        return keys[slot] == key ? values[slot] : nil
    }

    mutating func store(_ key: UInt64, _ value: Value) {
        if keys.isEmpty {
            keys = [UInt64](repeating: 0, count: 1 << bits)
            values = [Value?](repeating: nil, count: 1 << bits)
        }
        let slot = slot(key)
        keys[slot] = key
        values[slot] = value
    }
}
