/// A deterministic random-number generator (SplitMix64), so every generated case reproduces from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    /// Creates a generator for `seed`.
    init(seed: UInt64) {
        state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 0x2545_F491_4F6C_DD1D
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// A value in `range`.
    mutating func u64(_ range: ClosedRange<UInt64>) -> UInt64 { UInt64.random(in: range, using: &self) }

    /// True with probability `percent` / 100.
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
}
