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
    /// list (`Sampling.withoutReplacement`, first list then second) and runs the two-sample KS test; a round agrees
    /// when its p-value is above `pThreshold` (if `same`) or below it (otherwise). Returns `nil` when a subset would
    /// be empty (a list shorter than `1/fraction`). The subsets are gathered by position into two reused buffers
    /// and sorted in place, which gives the same draws and the same p-values as copying the lists every round.
    /// - Throws: `WeheAnalysisError` with code `.statisticsFailed` if the KS routine rejects a subset.
    static func compute<G: RandomNumberGenerator>(
        _ first: [Double],
        _ second: [Double],
        fullPValue: Double,
        rounds: Int,
        fraction: Double,
        pThreshold: Double,
        method: KolmogorovSmirnov.Method = StatisticsBridge.ksMethod,
        using generator: inout G
    ) throws(WeheAnalysisError) -> Result? {
        let firstCount = Int((Double(first.count) * fraction).rounded(.down))
        let secondCount = Int((Double(second.count) * fraction).rounded(.down))
        guard firstCount > 0, secondCount > 0, rounds > 0 else { return nil }
        let same = fullPValue >= pThreshold
        var agreeing = 0
        var statisticSum = 0.0
        var pValueSum = 0.0
        var positions: [Int] = []
        var firstSubset = [Double](repeating: 0, count: firstCount)
        var secondSubset = [Double](repeating: 0, count: secondCount)
        for _ in 0..<rounds {
            positions.removeAll(keepingCapacity: true)
            Sampling.appendPositions(count: firstCount, from: first.count, to: &positions, using: &generator)
            Sampling.appendPositions(count: secondCount, from: second.count, to: &positions, using: &generator)
            for index in 0..<firstCount { firstSubset[index] = first[positions[index]] }
            for index in 0..<secondCount { secondSubset[index] = second[positions[firstCount + index]] }
            let result = try StatisticsBridge.kolmogorovSmirnov(
                sorting: &firstSubset, &secondSubset, of: "jackknife subsets", method: method)
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
