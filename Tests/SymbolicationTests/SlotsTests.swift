import Testing
@testable import Symbolication

/// The direct-mapped caches of `LocationCache`: a value is only ever returned for its own key, and
/// a cache that grows keeps what it held.
@Suite struct SlotsTests {
    /// A seeded generator so failures reproduce.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: [6, 10, 12, 16])
    func aValueIsOnlyEverAnsweredForItsKey(bits: Int) {
        var random = Seeded(state: UInt64(bits))
        var slots = Slots<UInt64>(bits: bits)
        var stored: [UInt64: UInt64] = [:]
        for round in 0..<20_000 {
            // Small keys (table indices) and arbitrary ones, some stored again with a new value.
            let key = round % 3 == 0 ? UInt64(round % 700) : random.next() % 50_000
            let value = random.next()
            slots.store(key, value)
            stored[key] = value
            #expect(slots.value(key) == value)
        }
        var present = 0
        for (key, value) in stored {
            if let answer = slots.value(key) {
                #expect(answer == value)
                present += 1
            }
        }
        // Full to about 1 - 1/e of its slots, or holding every key when it has room for them.
        let capacity = 1 << bits
        #expect(present >= min(stored.count, capacity) / 2)
        #expect(present <= capacity)
    }

    @Test func growingKeepsTheEntries() {
        var slots = Slots<Int>(bits: 16)
        // 1,000 keys fit the first 1,024 slots; the 1,025th store doubles the cache.
        for key in 0..<1_000 { slots.store(UInt64(key) * 7919, key) }
        let before = (0..<1_000).filter { slots.value(UInt64($0) * 7919) == $0 }.count
        for key in 1_000..<1_100 { slots.store(UInt64(key) * 7919, key) }
        let kept = (0..<1_000).filter { slots.value(UInt64($0) * 7919) == $0 }.count
        #expect(before > 500)
        #expect(kept >= before - 100)
        // Nil answers (a range without frames) are answers too.
        var optional = Slots<Int?>(bits: 8)
        optional.store(5, nil)
        #expect(optional.value(5) == .some(nil))
        #expect(optional.value(6) == nil)
    }
}
