import WeheStatistics

/// WeHeY test 1, `pairsum_vs_single_xput` (analysis.md section 6.3): does the summed throughput of the two
/// simultaneous replays look like the throughput of the earlier single replay?
///
/// If one per-user limiter inside the access network throttles both simultaneous replays, their sum matches the
/// single replay; if the bottlenecks are on the two separate branches, the sum is about twice as large.
///
/// Procedure: `Psum[i] = P₁[i] + P₂[i]` up to the shorter list; `N = min(|S|, |Psum|)`, `k = ⌊N/2⌋`; 80 Monte
/// Carlo rounds each draw `k` values without replacement from `S` and from `Psum` and record
/// `|S̄ − P̄| / max(S̄, P̄) · 100`; a one-sided Mann-Whitney U test (normal approximation with tie and continuity
/// corrections) asks whether these differences are stochastically *smaller* than the reference `T_diff`.
public enum ThroughputSumTest {
    /// The test's numbers.
    public struct Result: Sendable, Hashable, Codable {
        /// `mwuVal`: U₁ of the observed differences.
        public var statistic: Double
        /// `mwuPVal`: one-sided p-value ("observed differences are smaller than T_diff").
        public var pValue: Double
        /// The observed percent differences, one per Monte Carlo round.
        public var differences: [Double]
        /// Mean of each simultaneous replay, Mbit/s.
        public var simultaneousMeansMbps: [Double]
        /// Mean of the summed list, Mbit/s.
        public var sumMeanMbps: Double
        /// Mean of the single replay, Mbit/s.
        public var singleMeanMbps: Double
    }

    /// Runs the test.
    /// - Parameters:
    ///   - single: throughput samples of the single test's original replay, Mbit/s.
    ///   - first: samples of the original replay to server 1 during the simultaneous run.
    ///   - second: samples of the original replay to server 2.
    ///   - rounds: Monte Carlo rounds (80, the size of `T_diff`).
    ///   - reference: the reference distribution (`TDiffReference.values`).
    ///   - generator: the random source of the draws.
    /// - Returns: the result, or `nil` when there is not enough data: fewer than two samples in the single list or
    ///   the summed list, or a mean of zero in some draw (no throughput at all). The caller reports the test as
    ///   absent.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for negative or non-finite samples,
    ///   `.invalidConfiguration` for fewer than one round or an empty reference, `.statisticsFailed` if the
    ///   Mann-Whitney routine rejects its input.
    public static func run<G: RandomNumberGenerator>(
        single: [Double],
        first: [Double],
        second: [Double],
        rounds: Int = 80,
        reference: [Double] = TDiffReference.values,
        using generator: inout G
    ) throws(WeheAnalysisError) -> Result? {
        try SeriesValidation.checkThroughputs(single, role: "single replay")
        try SeriesValidation.checkThroughputs(first, role: "simultaneous replay 1")
        try SeriesValidation.checkThroughputs(second, role: "simultaneous replay 2")
        guard rounds >= 1 else {
            throw WeheAnalysisError(.invalidConfiguration, "the throughput-sum test needs at least one round")
        }
        let sum = zip(first, second).map { $0 + $1 }
        let count = min(single.count, sum.count)
        let drawn = count / 2
        guard drawn >= 1 else { return nil }
        var differences: [Double] = []
        differences.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let singleDraw = Sampling.withoutReplacement(single, count: drawn, using: &generator)
            let sumDraw = Sampling.withoutReplacement(sum, count: drawn, using: &generator)
            let singleMean = try StatisticsBridge.mean(singleDraw, of: "single-replay draw")
            let sumMean = try StatisticsBridge.mean(sumDraw, of: "summed-replay draw")
            let larger = max(singleMean, sumMean)
            guard larger > 0 else { return nil }
            differences.append(abs(singleMean - sumMean) / larger * 100)
        }
        let comparison = try compare(differences: differences, reference: reference)
        return Result(
            statistic: comparison.statistic, pValue: comparison.pValue, differences: differences,
            simultaneousMeansMbps: [mean(first), mean(second)], sumMeanMbps: mean(sum),
            singleMeanMbps: mean(single)
        )
    }

    /// The Mann-Whitney step alone: U₁ and the one-sided p-value of "`differences` are stochastically smaller than
    /// `reference`" (analysis.md section 8.2 gives vectors for it).
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for empty lists, `.invalidSample` for
    ///   non-finite values, `.statisticsFailed` if the routine rejects its input.
    public static func compare(
        differences: [Double],
        reference: [Double] = TDiffReference.values
    ) throws(WeheAnalysisError) -> (statistic: Double, pValue: Double) {
        guard !differences.isEmpty, !reference.isEmpty else {
            throw WeheAnalysisError(.invalidConfiguration, "the Mann-Whitney test needs two non-empty lists")
        }
        guard differences.allSatisfy(\.isFinite), reference.allSatisfy(\.isFinite) else {
            throw WeheAnalysisError(.invalidSample, "the Mann-Whitney test needs finite values")
        }
        do {
            let result = try MannWhitneyU.test(
                differences, reference, alternative: .less, method: .asymptotic, continuity: true)
            return (result.u1, result.pValue)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "Mann-Whitney U test failed: \(error.message)")
        }
    }

    /// Plain mean of validated samples; 0 for an empty list.
    private static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
    }
}
