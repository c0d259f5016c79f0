import SymBytes
import SymDemangle
import SymReport
import SymTable
import Synchronization

/// Source locations of one module's table, with demangled names and joined paths made once per
/// name and file record, and whole answers (a `LocationChain`, rendered for both writers) kept
/// per table range: every address of a range has the same frames, and reports repeat the same
/// functions, files and return addresses, so a frame costs a binary search and a cache hit, and
/// a range seen before no string work at all.
///
/// The caches are direct-mapped (a slot per hashed key, a collision only costs recomputing),
/// sized from the table (about two slots per record, at most 2^16): no `Dictionary` hashing per
/// frame, and bounded memory whatever the reports hold.
final class LocationCache: Sendable {
    /// The table (not its `ModuleSymbols`, which keeps its location caches: no cycle).
    let table: SymbolTable
    /// How function names are spelled (`Symbolicator.demangler`).
    private let demangler: Demangler
    private let names: Mutex<Slots<(function: String, mangled: String)>>
    private let paths: Mutex<Slots<String>>
    private let chains: Mutex<Slots<LocationChain?>>
    /// The renderings each chain is made with.
    private let renderings: LocationChain.Renderings

    /// What tells one table's caches apart: the renderings and the naming of their chains.
    struct Key: Hashable {
        let renderings: UInt8
        let demangler: Demangler
    }

    init(table: SymbolTable, renderings: LocationChain.Renderings = .all, demangler: Demangler = Demangler()) {
        self.table = table
        self.renderings = renderings
        self.demangler = demangler
        let statistics = table.statistics
        names = Mutex(Slots(bits: Self.bits(for: statistics.names)))
        paths = Mutex(Slots(bits: Self.bits(for: statistics.files)))
        chains = Mutex(Slots(bits: Self.bits(for: statistics.ranges)))
    }

    /// Bits of a direct-mapped cache for `records` keys: two slots per key, 2^6 to 2^16 slots.
    static func bits(for records: Int) -> Int {
        var bits = 6
        while 1 << bits < 2 * records && bits < 16 { bits += 1 }
        return bits
    }

    /// The locations at `address`, innermost first, physical function last; nil when no function
    /// covers it. Throws on a corrupt table.
    func chain(at address: UInt64) throws(FormatError) -> LocationChain? {
        guard let range = table.rangeIndex(containing: address) else { return nil }
        return try chain(inRange: range)
    }

    /// The locations of table range `range` (see `chain(at:)`).
    func chain(inRange range: Int) throws(FormatError) -> LocationChain? {
        let key = UInt64(range)
        if let known = chains.withLock({ $0.value(key) }) { return known }
        var locations: [SourceLocation] = []
        var frames = table.frames(inRange: range)
        while let frame = try frames.nextIndices() {
            let name = try self.name(frame.name, in: table)
            locations.append(SourceLocation(function: name.function, mangled: name.mangled,
                                            file: try path(frame.file, in: table), line: frame.line, column: frame.column))
        }
        let chain = locations.isEmpty ? nil : LocationChain(locations, renderings: renderings)
        // The chain evicted is freed after the lock is released (freeing a chain releases its
        // names and paths: too long to hold the lock the other workers wait for).
        let evicted = chains.withLock { $0.store(key, chain) }
        withExtendedLifetime(evicted) {}
        return chain
    }

    /// The printed and stored names of function-name record `index`.
    private func name(_ index: UInt32, in table: SymbolTable) throws(FormatError) -> (function: String, mangled: String) {
        let key = UInt64(index)
        if let known = names.withLock({ $0.value(key) }) { return known }
        var raw: [UInt8] = []
        table.withUTF8(try table.functionName(index)) { raw = Array($0) }
        let mangled = String(decoding: raw, as: UTF8.self)
        let function = mangled.isEmpty ? "??" : FrameRenderer.mayBeMangled(raw) ? demangler.demangleOrSelf(mangled) : mangled
        _ = names.withLock { $0.store(key, (function, mangled)) }
        return (function, mangled)
    }

    /// The source path of file record `index` (empty when unknown).
    private func path(_ index: UInt32, in table: SymbolTable) throws(FormatError) -> String {
        let key = UInt64(index)
        if let known = paths.withLock({ $0.value(key) }) { return known }
        let (directory, file) = try table.file(index)
        let joined = ModuleSymbols.sourcePath(directory: table.string(directory), file: table.string(file))
        _ = paths.withLock { $0.store(key, joined) }
        return joined
    }
}

/// One thread's cache in front of a `LocationCache`'s chains: the chains this thread was handed
/// before, by range, found without the lock every other thread takes (one lock word written by
/// both cores on every frame). Never shared between threads.
final class LocalChains {
    let shared: LocationCache
    private var chains: Slots<LocationChain?>

    init(_ shared: LocationCache) {
        self.shared = shared
        chains = Slots(bits: LocationCache.bits(for: shared.table.statistics.ranges))
    }

    /// The locations at `address` (see `LocationCache.chain(at:)`).
    func chain(at address: UInt64) throws(FormatError) -> LocationChain? {
        guard let range = shared.table.rangeIndex(containing: address) else { return nil }
        let key = UInt64(range)
        if let known = chains.value(key) { return known }
        let chain = try shared.chain(inRange: range)
        chains.store(key, chain)
        return chain
    }
}

/// A direct-mapped cache from 64-bit keys to values: a key's slot chosen by a multiplicative
/// hash, storing over an occupied slot evicts its value. It starts small (a one-report run touches
/// few pages) and doubles, keeping its entries, each time it has taken as many stores as it has
/// slots, up to `1 << bits` slots: a long run with many distinct keys gets the room it needs.
struct Slots<Value> {
    private var keys: [UInt64] = []
    private var values: [Value?] = []
    private var bits: Int
    private let maximumBits: Int
    /// Stores since the last growth.
    private var stores = 0

    /// A cache of at most `1 << bits` slots, starting with `1 << min(bits, 10)`.
    init(bits: Int) {
        maximumBits = bits
        self.bits = min(bits, 10)
    }

    private func slot(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - bits))
    }

    func value(_ key: UInt64) -> Value? {
        guard !keys.isEmpty else { return nil }
        let slot = slot(key)
        return keys[slot] == key ? values[slot] : nil
    }

    /// Stores `value` under `key`; returns the value it evicted (for the caller to free when it
    /// likes: outside a lock).
    @discardableResult
    mutating func store(_ key: UInt64, _ value: Value) -> Value? {
        if keys.isEmpty {
            keys = [UInt64](repeating: 0, count: 1 << bits)
            values = [Value?](repeating: nil, count: 1 << bits)
        }
        stores += 1
        if stores > 1 << bits && bits < maximumBits { grow() }
        let slot = slot(key)
        keys[slot] = key
        let evicted = values[slot].take()
        values[slot] = value
        return evicted ?? nil
    }

    /// Doubles the slots, keeping every entry (two old slots may meet in one new slot: one stays).
    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        bits += 1
        stores = 0
        keys = [UInt64](repeating: 0, count: 1 << bits)
        values = [Value?](repeating: nil, count: 1 << bits)
        for index in oldKeys.indices {
            guard let value = oldValues[index] else { continue }
            let slot = slot(oldKeys[index])
            keys[slot] = oldKeys[index]
            values[slot] = value
        }
    }
}
