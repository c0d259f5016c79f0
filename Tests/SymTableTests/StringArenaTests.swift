import TestSupport
import Testing
@testable import SymTable

/// `StringArena` (the model's strings, back to back in blocks) and `StringInterner` (their
/// deduplication by bytes), checked against plain Swift arrays and dictionaries.
@Suite struct StringArenaTests {
    /// Seeded strings of every length class: empty, short, around and beyond a block.
    static func strings(seed: UInt64, count: Int) -> [[UInt8]] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { index in
            let length: Int
            switch index % 9 {
            case 0: length = 0
            case 1: length = StringArena.blockSize - Int.random(in: 0...3, using: &generator)
            case 2: length = StringArena.blockSize + Int.random(in: 1...100, using: &generator)
            default: length = Int.random(in: 1...300, using: &generator)
            }
            // Few distinct bytes, so that equal strings come up.
            return (0..<length).map { _ in UInt8.random(in: 0x61...0x62, using: &generator) | (length > 4 ? 0x10 : 0) }
        }
    }

    @Test(arguments: [1, 2, 3])
    func givesBackEveryStringAsAppended(seed: UInt64) {
        let strings = Self.strings(seed: seed, count: 60)
        var arena = StringArena()
        var indices: [UInt32] = []
        for string in strings {
            indices.append(string.withUnsafeBytes { arena.append($0) })
        }
        #expect(arena.byteCount == strings.reduce(0) { $0 + $1.count })
        for (string, index) in zip(strings, indices) {
            #expect(string.isEmpty == (index == 0))
            #expect(arena.byteCount(of: Int(index)) == string.count)
            #expect(arena.withBytes(of: Int(index)) { Array($0) } == string)
        }
        #expect(arena.count == 1 + strings.filter { !$0.isEmpty }.count)
        #expect(arena[0] == "" && arena.byteCount(of: 0) == 0)
    }

    @Test func comparesStringsByTheirBytes() {
        var arena = StringArena()
        let composed = arena.append("caf\u{E9}")        // é as one scalar
        let decomposed = arena.append("cafe\u{301}")    // e + combining acute: canonically equal
        let again = arena.append("caf\u{E9}")
        #expect(arena[Int(composed)] == "caf\u{E9}")
        #expect(!arena.equal(Int(composed), Int(decomposed)))
        #expect(arena.equal(Int(composed), Int(again)))

        var other = StringArena()
        other.append("caf\u{E9}")
        other.append("cafe\u{301}")
        #expect(other != arena)
        other.append("caf\u{E9}")
        #expect(other == arena)
    }

    /// Arenas holding the same strings are equal whatever their blocks.
    @Test func equalityIgnoresBlocks() {
        let long = [UInt8](repeating: 0x61, count: StringArena.blockSize - 10)
        var left = StringArena()
        long.withUnsafeBytes { _ = left.append($0) }
        left.append("0123456789abcdef")  // opens a second block
        var right = StringArena()
        long.withUnsafeBytes { _ = right.append($0) }
        right.append("0123456789abcdeX")
        #expect(left != right)
        #expect(left == left)
    }

    @Test(arguments: [4, 5])
    func internerDeduplicatesByBytes(seed: UInt64) {
        let strings = Self.strings(seed: seed, count: 400).map { Array($0.prefix(6)) }
        var arena = StringArena()
        var interner = StringInterner()
        var oracle: [[UInt8]: UInt32] = [[]: 0]
        for string in strings {
            let index = string.withUnsafeBytes { interner.intern($0, in: &arena) }
            if let known = oracle[string] {
                #expect(index == known)
            } else {
                #expect(Int(index) == arena.count - 1)
                oracle[string] = index
            }
            #expect(arena.withBytes(of: Int(index)) { Array($0) } == string)
        }
        #expect(arena.count == oracle.count)
        // String arguments go the same way as bytes.
        #expect(interner.intern("caf\u{E9}", in: &arena) == interner.intern("caf\u{E9}", in: &arena))
        #expect(interner.intern("caf\u{E9}", in: &arena) != interner.intern("cafe\u{301}", in: &arena))
    }

    /// One kind of string deduplicated in an arena that holds others too (the DWARF walker's paths
    /// beside its names): `find` finds only what `add` added, through the table's growth.
    @Test func internerFindsOnlyWhatItAdded() {
        var arena = StringArena()
        var paths = StringInterner()
        var added: [String: UInt32] = [:]
        for number in 0..<3000 {
            let name = "name\(number % 700)"
            let nameIndex = arena.append(name)
            let path = "/src/dir\(number % 50)/file\(number % 900).c"
            let found = path.utf8.withContiguousStorageIfAvailable { paths.find(UnsafeRawBufferPointer($0), in: arena) }!
            #expect(found == added[path], "\(path)")
            if found == nil {
                let index = arena.append(path)
                paths.add(index, in: arena)
                added[path] = index
            }
            // Names were appended apart: never found, even when a path is spelled alike.
            let nameFound = name.utf8.withContiguousStorageIfAvailable { paths.find(UnsafeRawBufferPointer($0), in: arena) }!
            #expect(nameFound == nil && nameIndex > 0)
        }
        #expect(added.count == 900)
        #expect(arena.count == 1 + 3000 + 900)
        #expect(paths.find(UnsafeRawBufferPointer(start: nil, count: 0), in: arena) == 0)
    }
}
