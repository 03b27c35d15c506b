import WeheCore

/// The client-side localization verdict from the two WeHeY tests' numbers (analysis.md section 6.5, protocol.md
/// section 12 item 8). Thresholds are configuration; the defaults are those of the current WeHeY clients.
///
/// * The throughput-sum test, when present, makes the result conclusive; the throughputs are *similar* when its
///   p-value is below `mwuPValueThreshold`.
/// * The loss-correlation test, when present with at least one p-value, makes the result conclusive; losses are
///   *correlated* when the fraction of p-values below `correlationPValueThreshold` is at least
///   `correlationRatioThreshold`.
/// * Neither present → inconclusive; similar or correlated → the differentiation is in the access network;
///   otherwise → no evidence.
public struct LocalizationRules: Sendable, Hashable, Codable {
    /// Threshold on the Mann-Whitney p-value (0.05).
    public var mwuPValueThreshold: Double
    /// Threshold on each Spearman p-value (0.05).
    public var correlationPValueThreshold: Double
    /// Fraction of interval sizes that must show a correlation (0.5; an older Android branch used 0.95).
    public var correlationRatioThreshold: Double

    /// Creates rules with the current WeHeY defaults.
    public init(
        mwuPValueThreshold: Double = 0.05,
        correlationPValueThreshold: Double = 0.05,
        correlationRatioThreshold: Double = 0.5
    ) {
        self.mwuPValueThreshold = mwuPValueThreshold
        self.correlationPValueThreshold = correlationPValueThreshold
        self.correlationRatioThreshold = correlationRatioThreshold
    }

    /// Checks that the thresholds are finite fractions.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending threshold.
    public func validated() throws(WeheAnalysisError) -> LocalizationRules {
        let values = [
            ("MWU p-value threshold", mwuPValueThreshold),
            ("correlation p-value threshold", correlationPValueThreshold),
            ("correlation ratio threshold", correlationRatioThreshold),
        ]
        for (name, value) in values where !(value.isFinite && value >= 0 && value <= 1) {
            throw WeheAnalysisError(.invalidConfiguration, "\(name) must lie in [0, 1], got \(value)")
        }
        return self
    }

    /// Decides the localization verdict.
    /// - Parameters:
    ///   - mwuPValue: the throughput-sum test's p-value, or `nil` when that test did not run.
    ///   - correlationPValues: the loss-correlation p-values (NaN already discarded), or `nil` when that test did
    ///     not run; an empty list counts as "not run".
    public func decide(mwuPValue: Double?, correlationPValues: [Double]?) -> LocalizationDecision {
        var conclusive = false
        var similar: Bool?
        var correlated: Bool?
        if let mwuPValue {
            conclusive = true
            similar = mwuPValue < mwuPValueThreshold
        }
        if let correlationPValues, !correlationPValues.isEmpty {
            conclusive = true
            let below = correlationPValues.filter { $0 < correlationPValueThreshold }.count
            correlated = Double(below) / Double(correlationPValues.count) >= correlationRatioThreshold
        }
        let verdict: LocalizationVerdict
        if !conclusive {
            verdict = .inconclusive
        } else if similar == true || correlated == true {
            verdict = .accessNetwork
        } else {
            verdict = .noEvidence
        }
        return LocalizationDecision(verdict: verdict, throughputSimilar: similar, lossCorrelated: correlated)
    }
}
