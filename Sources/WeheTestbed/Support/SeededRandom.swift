import Synchronization

/// A seeded pseudo-random source (SplitMix64) shared by the relay tasks, for reproducible loss decisions.
package final class SeededRandom: Sendable {
    private let state: Mutex<UInt64>

    /// A source starting from `seed`.
    package init(seed: UInt64) {
        state = Mutex(seed)
    }

    /// The next value, uniform in [0, 1).
    package func nextUnit() -> Double {
        let bits = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return mixed ^ (mixed >> 31)
        }
        return Double(bits >> 11) * 0x1.0p-53
    }
}
