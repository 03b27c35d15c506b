public import WeheCore

/// The outcome of `LocalizationRules.decide`.
public struct LocalizationDecision: Sendable, Hashable {
    /// The verdict.
    public var verdict: LocalizationVerdict
    /// Whether the pair's summed throughput looked like the single replay's; `nil` when that test did not run.
    public var throughputSimilar: Bool?
    /// Whether the two branches' losses were correlated; `nil` when that test did not run.
    public var lossCorrelated: Bool?
}
