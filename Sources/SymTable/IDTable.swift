/// An open-addressing hash set of record ids whose records live elsewhere (an array, the string
/// arena): 4 bytes a slot instead of a `Dictionary`'s copy of every key, and no SipHash.
///
/// The caller hashes its records and says whether an id's record matches. A table of 2^k slots
/// stores `id + 1` (0 marks an empty slot) in the low k bits of a slot, which always suffice as
/// the table doubles at three quarters full, and as many bits of the hash as are left over in the
/// high bits, so that most probes are settled without looking at the record (a big module has a
/// million records, and the tables are a good share of the writer's peak memory: storing whole
/// hashes would double them). Growing asks the caller for the hashes of the ids stored.
struct IDTable {
    private var slots: [UInt32]
    /// Bits of a slot that hold `id + 1`: log2 of the slot count.
    private var idBits: UInt32
    /// Ids stored.
    private(set) var count = 0

    /// Creates an empty table.
    init() {
        slots = [UInt32](repeating: 0, count: 64)
        idBits = 6
    }

    private var mask: Int { slots.count - 1 }

    /// The hash bits a slot keeps above the id, for a table of `2^idBits` slots.
    @inline(__always)
    private static func tag(_ hash: UInt64, idBits: UInt32) -> UInt32 {
        // The slot position comes from the hash's low bits; the tag from its high bits.
        idBits >= 32 ? 0 : UInt32(truncatingIfNeeded: hash >> 32) << idBits
    }

    /// The id whose record `matches` among those stored under `hash`, or nil.
    @inline(__always)
    func find(hash: UInt64, _ matches: (UInt32) -> Bool) -> UInt32? {
        let tag = Self.tag(hash, idBits: idBits)
        let idMask = UInt32(truncatingIfNeeded: mask)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = slots[slot]
            if stored == 0 { return nil }
            if stored & ~idMask == tag && matches((stored & idMask) - 1) { return (stored & idMask) - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// Stores `id` (below `UInt32.max`; callers number their records from 0) under `hash`;
    /// `hashOf` gives the hash of an id stored before, for when the table grows.
    mutating func insert(_ id: UInt32, hash: UInt64, hashOf: (UInt32) -> UInt64) {
        precondition(id < UInt32.max, "id out of range")
        // Grow at three quarters full, and until `id + 1` fits below the tag.
        while (count + 1) * 4 > slots.count * 3 || Int(id) + 1 >= slots.count {
            let old = slots
            let oldMask = UInt32(truncatingIfNeeded: old.count - 1)
            slots = []  // the old slots are the only copy while the new ones are filled
            slots = [UInt32](repeating: 0, count: old.count * 2)
            idBits += 1
            for stored in old where stored != 0 {
                let storedID = (stored & oldMask) - 1
                place(storedID, hashOf(storedID))
            }
        }
        place(id, hash)
        count += 1
    }

    private mutating func place(_ id: UInt32, _ hash: UInt64) {
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Self.tag(hash, idBits: idBits) | (id + 1)
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
