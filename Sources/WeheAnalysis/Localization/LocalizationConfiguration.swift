/// Settings of the WeHeY localization analysis (analysis.md sections 6.3-6.5). Defaults are the reference's.
public struct LocalizationConfiguration: Sendable, Hashable, Codable {
    /// The verdict thresholds (0.05 / 0.05 / 0.5).
    public var rules: LocalizationRules
    /// Monte Carlo rounds of the throughput-sum test (80).
    public var monteCarloRounds: Int
    /// The reference distribution of percent differences (`TDiffReference.values`).
    public var referenceDifferences: [Double]
    /// Settings of the loss-correlation test.
    public var lossCorrelation: LossCorrelationTest.Configuration

    /// Creates a configuration.
    public init(
        rules: LocalizationRules = LocalizationRules(),
        monteCarloRounds: Int = 80,
        referenceDifferences: [Double] = TDiffReference.values,
        lossCorrelation: LossCorrelationTest.Configuration = LossCorrelationTest.Configuration()
    ) {
        self.rules = rules
        self.monteCarloRounds = monteCarloRounds
        self.referenceDifferences = referenceDifferences
        self.lossCorrelation = lossCorrelation
    }

    /// Checks every value.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending value.
    public func validated() throws(WeheAnalysisError) -> LocalizationConfiguration {
        _ = try rules.validated()
        guard monteCarloRounds >= 1, monteCarloRounds <= 100_000 else {
            throw WeheAnalysisError(.invalidConfiguration, "Monte Carlo rounds must lie in 1...100000")
        }
        guard !referenceDifferences.isEmpty, referenceDifferences.allSatisfy(\.isFinite) else {
            throw WeheAnalysisError(.invalidConfiguration, "the reference differences must be non-empty and finite")
        }
        guard lossCorrelation.multiples.lowerBound >= 1, lossCorrelation.minimumIntervals.isFinite,
            lossCorrelation.minimumIntervals >= 1, lossCorrelation.minimumSamplesPerInterval >= 0
        else {
            throw WeheAnalysisError(.invalidConfiguration, "invalid loss-correlation settings \(lossCorrelation)")
        }
        return self
    }
}
