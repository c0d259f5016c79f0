/// An open-addressing hash set of record ids whose records live elsewhere (an array, the string
/// data): 8 bytes a slot (id and hash) instead of a `Dictionary`'s copy of every key, and no SipHash.
///
/// The caller hashes its records and says whether an id's record matches; the table stores
/// `id + 1` (0 marks an empty slot) with 32 bits of the hash, probes linearly and doubles at three
/// quarters full without asking the caller for anything (the hashes stored make a probe cheap,
/// and a big module has a million records: the table is a good share of the writer's memory).
struct IDTable {
    private var ids: [UInt32]
    private var hashes: [UInt32]
    private var mask: Int
    /// Ids stored.
    private(set) var count = 0

    /// Creates an empty table.
    init() {
        ids = [UInt32](repeating: 0, count: 64)
        hashes = [UInt32](repeating: 0, count: 64)
        mask = 63
    }

    /// The id whose record `matches` among those stored under `hash`, or nil.
    @inline(__always)
    func find(hash: UInt64, _ matches: (UInt32) -> Bool) -> UInt32? {
        let short = UInt32(truncatingIfNeeded: hash)
        var slot = Int(short) & mask
        while true {
            let stored = ids[slot]
            if stored == 0 { return nil }
            if hashes[slot] == short && matches(stored - 1) { return stored - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// Stores `id` (below `UInt32.max`) under `hash`.
    mutating func insert(_ id: UInt32, hash: UInt64) {
        precondition(id < UInt32.max, "id out of range")
        if (count + 1) * 4 > ids.count * 3 {
            let oldIDs = ids, oldHashes = hashes
            ids = [UInt32](repeating: 0, count: oldIDs.count * 2)
            hashes = [UInt32](repeating: 0, count: oldIDs.count * 2)
            mask = ids.count - 1
            for slot in oldIDs.indices where oldIDs[slot] != 0 { place(oldIDs[slot], oldHashes[slot]) }
        }
        place(id + 1, UInt32(truncatingIfNeeded: hash))
        count += 1
    }

    private mutating func place(_ stored: UInt32, _ short: UInt32) {
        var slot = Int(short) & mask
        while ids[slot] != 0 { slot = (slot + 1) & mask }
        ids[slot] = stored
        hashes[slot] = short
    }

    /// Mixes a 64-bit value into a well-spread hash (the finaliser of MurmurHash3).
    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x &*= 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x &*= 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return x
    }

    /// The hash of some bytes, eight at a time.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var index = 0
        while index + 8 <= bytes.count {
            hash = mix(hash ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        return mix(hash ^ tail)
    }
}

extension FrameRecord {
    /// The hash `TableBuilder` files this record under.
    var tableHash: UInt64 {
        IDTable.mix(IDTable.mix(UInt64(file) << 32 | UInt64(line)) ^ (UInt64(column) << 32 | UInt64(name))
                    ^ (UInt64(physicalName) << 32 | UInt64(caller)) &* 0x9E37_79B9_7F4A_7C15)
    }
}
