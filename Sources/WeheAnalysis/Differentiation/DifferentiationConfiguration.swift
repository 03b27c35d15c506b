/// Settings of the per-test analysis (analysis.md sections 2.1 and 2.4). The defaults reproduce the current Wehe
/// server and the Android / command-line client.
public struct DifferentiationConfiguration: Sendable, Hashable, Codable {
    /// The client decision rule and its thresholds.
    public var rules: VerdictRules
    /// Number of jackknife rounds (100).
    public var jackknifeRounds: Int
    /// Fraction of each list drawn, without replacement, in every jackknife round (0.5; the count is rounded down).
    public var jackknifeFraction: Double
    /// The KS p-value that splits jackknife rounds into "same" and "different" (0.05).
    public var jackknifePThreshold: Double
    /// Whether to drop the last sample of each list before analysing, as the server does with client uploads
    /// (the last interval may be partial). Off by default: stored series are already trimmed.
    public var dropsLastSample: Bool

    /// Creates a configuration; every value defaults to the reference's.
    public init(
        rules: VerdictRules = .android,
        jackknifeRounds: Int = 100,
        jackknifeFraction: Double = 0.5,
        jackknifePThreshold: Double = 0.05,
        dropsLastSample: Bool = false
    ) {
        self.rules = rules
        self.jackknifeRounds = jackknifeRounds
        self.jackknifeFraction = jackknifeFraction
        self.jackknifePThreshold = jackknifePThreshold
        self.dropsLastSample = dropsLastSample
    }

    /// Checks every value.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending value.
    public func validated() throws(WeheAnalysisError) -> DifferentiationConfiguration {
        _ = try rules.validated()
        guard jackknifeRounds >= 1, jackknifeRounds <= 100_000 else {
            throw WeheAnalysisError(
                .invalidConfiguration, "jackknife rounds must lie in 1...100000, got \(jackknifeRounds)")
        }
        guard jackknifeFraction.isFinite, jackknifeFraction > 0, jackknifeFraction <= 1 else {
            throw WeheAnalysisError(
                .invalidConfiguration, "jackknife fraction must lie in (0, 1], got \(jackknifeFraction)")
        }
        guard jackknifePThreshold.isFinite, jackknifePThreshold > 0, jackknifePThreshold < 1 else {
            throw WeheAnalysisError(
                .invalidConfiguration, "jackknife p threshold must lie in (0, 1), got \(jackknifePThreshold)")
        }
        return self
    }
}
