import WeheStatistics

/// The jackknife ratio of analysis.md section 2.1 step 5 (from NetPolice): how consistently half-size subsets of the
/// two lists agree with the KS decision on the full lists.
enum Jackknife {
    /// The ratio and the mean subset statistics.
    struct Result: Sendable, Hashable {
        /// Fraction of rounds agreeing with the full-list decision.
        var ratio: Double
        /// Mean KS statistic over the rounds.
        var meanStatistic: Double
        /// Mean KS p-value over the rounds.
        var meanPValue: Double
    }

    /// Computes the jackknife ratio.
    ///
    /// `same = (fullPValue ≥ pThreshold)`; each round draws `⌊fraction·n⌋` values without replacement from each
    /// list and runs the two-sample KS test; a round agrees when its p-value is above `pThreshold` (if `same`) or
    /// below it (otherwise). Returns `nil` when a subset would be empty (a list shorter than `1/fraction`).
    /// - Throws: `WeheAnalysisError` with code `.statisticsFailed` if the KS routine rejects a subset.
    static func compute<G: RandomNumberGenerator>(
        _ first: [Double],
        _ second: [Double],
        fullPValue: Double,
        rounds: Int,
        fraction: Double,
        pThreshold: Double,
        using generator: inout G
    ) throws(WeheAnalysisError) -> Result? {
        let firstCount = Int((Double(first.count) * fraction).rounded(.down))
        let secondCount = Int((Double(second.count) * fraction).rounded(.down))
        guard firstCount > 0, secondCount > 0, rounds > 0 else { return nil }
        let same = fullPValue >= pThreshold
        var agreeing = 0
        var statisticSum = 0.0
        var pValueSum = 0.0
        for _ in 0..<rounds {
            let firstSubset = Sampling.withoutReplacement(first, count: firstCount, using: &generator)
            let secondSubset = Sampling.withoutReplacement(second, count: secondCount, using: &generator)
            let result = try StatisticsBridge.kolmogorovSmirnov(firstSubset, secondSubset, of: "jackknife subsets")
            statisticSum += result.statistic
            pValueSum += result.pValue
            if same ? result.pValue > pThreshold : result.pValue < pThreshold {
                agreeing += 1
            }
        }
        let count = Double(rounds)
        return Result(
            ratio: Double(agreeing) / count, meanStatistic: statisticSum / count, meanPValue: pValueSum / count)
    }
}
