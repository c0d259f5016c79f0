/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so every generated or hostile
/// test input reproduces from its seed. Shared by all test targets.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose sequence is determined by `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// A value in `range`.
    public mutating func u64(_ range: ClosedRange<UInt64>) -> UInt64 { UInt64.random(in: range, using: &self) }

    /// True with probability `percent` / 100.
    public mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
}
