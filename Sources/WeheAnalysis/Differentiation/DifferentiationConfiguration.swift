import WeheCore

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
    /// The fewest positive throughput samples each replay needs for "no differentiation" (5). With fewer, a test
    /// the rule does not find differentiated is inconclusive ("too few measurements"): the exact two-sided KS
    /// p-value of two samples of n values cannot drop below 2 / C(2n, n), which is above the published 0.01
    /// threshold for n ≤ 4 (0.029 for n = 4, 0.0079 for n = 5), so such a test could never have seen a difference.
    /// A replay without any positive sample is always inconclusive (no KS test). A differentiation the KS test
    /// supports stands (its p-value accounts for the sample sizes). Our project's rule: the reference has none.
    public var minimumPositiveSamples: Int

    /// The default of `minimumPositiveSamples`.
    public static let defaultMinimumPositiveSamples = 5

    /// Creates a configuration; every value defaults to the reference's, and the sample minimum to ours.
    public init(
        rules: VerdictRules = .android,
        jackknifeRounds: Int = 100,
        jackknifeFraction: Double = 0.5,
        jackknifePThreshold: Double = 0.05,
        dropsLastSample: Bool = false,
        minimumPositiveSamples: Int = DifferentiationConfiguration.defaultMinimumPositiveSamples
    ) {
        self.rules = rules
        self.jackknifeRounds = jackknifeRounds
        self.jackknifeFraction = jackknifeFraction
        self.jackknifePThreshold = jackknifePThreshold
        self.dropsLastSample = dropsLastSample
        self.minimumPositiveSamples = minimumPositiveSamples
    }

    private enum CodingKeys: String, CodingKey {
        case rules, jackknifeRounds, jackknifeFraction, jackknifePThreshold, dropsLastSample, minimumPositiveSamples
    }

    /// Decodes a configuration; a missing `minimumPositiveSamples` (configurations written before it existed)
    /// takes the default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rules = try container.decode(VerdictRules.self, forKey: .rules)
        jackknifeRounds = try container.decode(Int.self, forKey: .jackknifeRounds)
        jackknifeFraction = try container.decode(Double.self, forKey: .jackknifeFraction)
        jackknifePThreshold = try container.decode(Double.self, forKey: .jackknifePThreshold)
        dropsLastSample = try container.decode(Bool.self, forKey: .dropsLastSample)
        minimumPositiveSamples =
            try container.decodeIfPresent(Int.self, forKey: .minimumPositiveSamples)
            ?? Self.defaultMinimumPositiveSamples
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
        guard minimumPositiveSamples >= 1, minimumPositiveSamples <= 100_000 else {
            throw WeheAnalysisError(
                .invalidConfiguration,
                "minimum positive samples must lie in 1...100000, got \(minimumPositiveSamples)")
        }
        return self
    }

    /// Why a pair of replays cannot support "no differentiation", or `nil` when both have at least
    /// `minimumPositiveSamples` positive throughput samples. The same rule serves the server's analysis and the client's check of its own
    /// samples, so that both reach the same verdict for the same samples.
    /// - Parameters:
    ///   - originalValues: the original replay's samples, Mbit/s (zeros included).
    ///   - controlValues: the control replay's samples, Mbit/s.
    public func insufficientDataReason(originalValues: [Double], controlValues: [Double]) -> String? {
        func problem(_ values: [Double], _ role: String) -> String? {
            let positive = values.reduce(0) { $1 > 0 ? $0 + 1 : $0 }
            if values.isEmpty { return "the \(role) replay has no samples" }
            if positive == 0 { return "the \(role) replay has no positive throughput sample" }
            if positive < minimumPositiveSamples {
                return "the \(role) replay has \(positive) positive throughput sample\(positive == 1 ? "" : "s")"
            }
            return nil
        }
        let problems = [problem(originalValues, "original"), problem(controlValues, "control")].compactMap { $0 }
        guard !problems.isEmpty else { return nil }
        return "\(AnalysisSummary.insufficientDataPrefix): " + problems.joined(separator: ", ")
            + " (at least \(minimumPositiveSamples) each are needed)"
    }
}
