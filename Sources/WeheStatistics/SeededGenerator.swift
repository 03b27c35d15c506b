/// A deterministic random number generator: xoshiro256** (Blackman and Vigna) with its 256-bit state filled by
/// four outputs of splitmix64 started at `seed`.
///
/// The same seed gives the same stream on every platform and Swift version, which makes jackknife and Monte Carlo
/// steps reproducible in tests. Not suitable for cryptography.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a generator whose stream is fixed by `seed`.
    public init(seed: UInt64) {
        var mixer = seed
        state = (
            Self.splitMix(&mixer), Self.splitMix(&mixer), Self.splitMix(&mixer), Self.splitMix(&mixer)
        )
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = Self.rotateLeft(state.1 &* 5, 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = Self.rotateLeft(state.3, 45)
        return result
    }

    /// One step of splitmix64: advances `value` by the golden-ratio increment and returns its mixed form.
    static func splitMix(_ value: inout UInt64) -> UInt64 {
        value &+= 0x9E37_79B9_7F4A_7C15
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static func rotateLeft(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }
}
