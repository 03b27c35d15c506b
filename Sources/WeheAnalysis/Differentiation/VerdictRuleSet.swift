/// Which published client's decision rule turns the analyzer's numbers into a verdict (analysis.md section 2.4).
///
/// The two rules differ in two places (vectors V7 and V9 of analysis.md section 8.1):
///
/// * When the area threshold drops to 0.3 for fast connections: `.android` with default thresholds and
///   `m_O > 10` or `m_R > 10` (strictly); `.ios` whenever the area threshold is 0.5 and `max(m_O, m_R) ≥ 10`.
/// * The jackknife ratio: ignored by `.android`; `.ios` requires it to be ≥ 0.95 for differentiation.
///
/// The default is `.android`: it does not depend on the jackknife ratio, which comes from random subsamples, so the
/// same throughput samples always give the same verdict.
public enum VerdictRuleSet: String, Sendable, Hashable, Codable, CaseIterable {
    /// The Android and command-line rule: deterministic, jackknife ratio ignored. The default.
    case android
    /// The iOS rule: additionally requires the jackknife ratio to reach its threshold.
    case ios
}
