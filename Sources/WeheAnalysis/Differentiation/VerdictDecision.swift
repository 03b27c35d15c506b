public import WeheCore

/// The outcome of `VerdictRules.decide`: the verdict, its direction and the thresholds that produced it.
public struct VerdictDecision: Sendable, Hashable {
    /// The verdict.
    public var verdict: Verdict
    /// For differentiation: `.prioritized` when the original was faster than the control, else `.throttled`.
    public var direction: DifferentiationDirection?
    /// The thresholds that were applied.
    public var thresholds: AppliedThresholds

    /// Creates a decision.
    public init(verdict: Verdict, direction: DifferentiationDirection?, thresholds: AppliedThresholds) {
        self.verdict = verdict
        self.direction = direction
        self.thresholds = thresholds
    }
}
