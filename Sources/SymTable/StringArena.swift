/// Strings stored back to back in blocks of bytes, numbered from 0 in the order they were
/// appended: a few allocations for all the names of a module instead of a heap object per
/// `String` (a big Swift module has about 80,000 names, 7 MB of text, that take 12 MB as Strings).
/// The arena grows by whole blocks, so its bytes are never copied (a growing array holds its old
/// and its new storage at once).
///
/// String 0 is always the empty string. The arena stores bytes as given (no Unicode
/// normalisation): two strings are equal when their bytes are. Appending does not deduplicate;
/// `StringInterner` does.
public struct StringArena: Sendable, Equatable {
    /// Bytes a block holds; a longer string has a block of its own.
    static let blockSize = 256 << 10
    /// Bits of an end offset within its block.
    private static let offsetBits: UInt64 = 40
    private static let offsetMask: UInt64 = (1 << 40) - 1

    /// The strings' UTF-8 bytes, back to back; a string never straddles two blocks.
    private var blocks: [[UInt8]] = []
    /// Where each string ends: its block in the high 24 bits, one past its last byte in the low 40
    /// (a block holds one string of up to a terabyte). A string starts where the one before it
    /// ends, or at 0 when it opens a new block.
    private var ends: [UInt64] = [0]
    /// Bytes of text held.
    public private(set) var byteCount = 0

    /// Creates an arena holding only the empty string.
    public init() {}

    /// Number of strings, the empty one included.
    public var count: Int { ends.count }

    /// String `index` decoded (ill-formed UTF-8 repaired); for tests, messages and small producers.
    public subscript(index: Int) -> String {
        withBytes(of: index) { String(decoding: $0, as: UTF8.self) }
    }

    /// The block, start and end of string `index`.
    @inline(__always)
    private func location(of index: Int) -> (block: Int, start: Int, end: Int) {
        let end = ends[index]
        let block = Int(truncatingIfNeeded: end >> Self.offsetBits)
        guard index > 0 else { return (block, 0, 0) }
        let previous = ends[index - 1]
        let start = previous >> Self.offsetBits == end >> Self.offsetBits
            ? Int(truncatingIfNeeded: previous & Self.offsetMask) : 0
        return (block, start, Int(truncatingIfNeeded: end & Self.offsetMask))
    }

    /// Number of bytes of string `index`.
    public func byteCount(of index: Int) -> Int {
        let location = location(of: index)
        return location.end - location.start
    }

    /// Calls `body` with the bytes of string `index`.
    public func withBytes<Result>(of index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let location = location(of: index)
        if location.start == location.end { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try blocks[location.block].withUnsafeBytes { block in
            try body(UnsafeRawBufferPointer(rebasing: block[location.start..<location.end]))
        }
    }

    /// Whether strings `left` and `right` have the same bytes.
    public func equal(_ left: Int, _ right: Int) -> Bool {
        if left == right { return true }
        guard byteCount(of: left) == byteCount(of: right) else { return false }
        return withBytes(of: left) { leftBytes in
            withBytes(of: right) { rightBytes in leftBytes.elementsEqual(rightBytes) }
        }
    }

    /// Whether the two arenas hold the same strings in the same order.
    public static func == (left: StringArena, right: StringArena) -> Bool {
        guard left.count == right.count, left.byteCount == right.byteCount else { return false }
        for index in 0..<left.count {
            let same = left.withBytes(of: index) { leftBytes in
                right.withBytes(of: index) { rightBytes in leftBytes.elementsEqual(rightBytes) }
            }
            if !same { return false }
        }
        return true
    }

    /// Appends `text` (no deduplication) and returns its index; the empty string is index 0.
    @discardableResult
    public mutating func append(_ text: String) -> UInt32 {
        if text.isEmpty { return 0 }
        var text = text
        return text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends UTF-8 `text` (no deduplication) and returns its index; the empty string is index 0.
    @discardableResult
    public mutating func append(_ text: UnsafeRawBufferPointer) -> UInt32 {
        if text.isEmpty { return 0 }
        if blocks.isEmpty || blocks[blocks.count - 1].count + text.count > Self.blockSize {
            var block: [UInt8] = []
            block.reserveCapacity(max(Self.blockSize, text.count))
            blocks.append(block)
        }
        let block = blocks.count - 1
        blocks[block].append(contentsOf: text)
        ends.append(UInt64(block) << Self.offsetBits | UInt64(blocks[block].count))
        byteCount += text.count
        return UInt32(truncatingIfNeeded: ends.count - 1)
    }

    /// Makes room for `strings` more strings.
    public mutating func reserveCapacity(strings: Int) {
        ends.reserveCapacity(ends.count + strings)
    }
}

/// Deduplicates the strings of a `StringArena` by their bytes: a hash set of string indices
/// (8 bytes a slot) over the arena's own bytes, so no string is held twice and no `String` key is
/// made.
public struct StringInterner: Sendable {
    private var table = IDTable()

    /// Creates an interner for an arena holding only the empty string.
    public init() {}

    /// The index of `text` in `arena`, appended when it is not there yet. Every string of the
    /// arena must have been added through this interner (or `add`), or it may be held twice.
    public mutating func intern(_ text: UnsafeRawBufferPointer, in arena: inout StringArena) -> UInt32 {
        if text.isEmpty { return 0 }
        let hash = IDTable.hash(text)
        if let found = find(text, hash: hash, in: arena) { return found }
        let index = arena.append(text)
        insert(index, hash: hash, in: arena)
        return index
    }

    /// The index of a string of `arena` equal to `text` that this interner added, if any (0 for
    /// the empty text).
    public func find(_ text: UnsafeRawBufferPointer, in arena: StringArena) -> UInt32? {
        if text.isEmpty { return 0 }
        return find(text, hash: IDTable.hash(text), in: arena)
    }

    /// Adds string `index` of `arena`, appended by the caller, to the strings `find` finds. For
    /// an arena that holds strings of several kinds, of which only one is deduplicated.
    public mutating func add(_ index: UInt32, in arena: StringArena) {
        insert(index, hash: arena.withBytes(of: Int(index)) { IDTable.hash($0) }, in: arena)
    }

    private func find(_ text: UnsafeRawBufferPointer, hash: UInt64, in arena: StringArena) -> UInt32? {
        table.find(hash: hash) { index in arena.withBytes(of: Int(index)) { $0.elementsEqual(text) } }
    }

    private mutating func insert(_ index: UInt32, hash: UInt64, in arena: StringArena) {
        table.insert(index, hash: hash) { index in arena.withBytes(of: Int(index)) { IDTable.hash($0) } }
    }

    /// The index of `text` in `arena`, appended when it is not there yet.
    public mutating func intern(_ text: String, in arena: inout StringArena) -> UInt32 {
        if text.isEmpty { return 0 }
        var text = text
        return text.withUTF8 { intern(UnsafeRawBufferPointer($0), in: &arena) }
    }
}
