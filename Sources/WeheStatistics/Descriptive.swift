import Foundation

/// Descriptive statistics of one sample, with the conventions of NumPy (linear percentiles, population standard
/// deviation with ddof 0, average ranks for ties).
///
/// Every function throws `emptySample` for an empty list and `nonFiniteValue` for NaN or infinite entries. Sums are
/// compensated, so results may differ from NumPy's pairwise sums in the last bit or two.
public enum Descriptive {
    /// Arithmetic mean.
    public static func mean(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        return meanOfValid(values)
    }

    /// Median: the middle value, or the mean of the two middle values for an even count (NumPy `median`).
    public static func median(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        let sorted = values.sorted()
        let middle = sorted.count / 2
        if sorted.count % 2 == 1 { return sorted[middle] }
        return (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The `q`-th percentile, `q` in [0, 100], with NumPy's default `linear` method: the sorted values sit at
    /// positions 0…n−1 and position `(n − 1)·q/100` is interpolated linearly.
    /// - Throws: `invalidArgument` when `q` is outside [0, 100] or NaN.
    public static func percentile(_ values: [Double], _ q: Double) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        guard q >= 0, q <= 100 else {
            throw StatisticsError(.invalidArgument, "percentile \(q) is outside [0, 100]")
        }
        return percentileOfSorted(values.sorted(), q)
    }

    /// Several percentiles of one list (sorted once).
    /// - Throws: as `percentile(_:_:)`.
    public static func percentiles(_ values: [Double], _ qs: [Double]) throws(StatisticsError) -> [Double] {
        try Validation.requireFiniteNonEmpty(values, "values")
        for q in qs where !(q >= 0 && q <= 100) {
            throw StatisticsError(.invalidArgument, "percentile \(q) is outside [0, 100]")
        }
        let sorted = values.sorted()
        return qs.map { percentileOfSorted(sorted, $0) }
    }

    /// Population standard deviation (divisor n, NumPy `std` with ddof 0).
    public static func populationStandardDeviation(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        return (sumOfSquaredDeviations(values) / Double(values.count)).squareRoot()
    }

    /// Sample standard deviation (divisor n − 1, ddof 1).
    /// - Throws: `invalidArgument` for fewer than two values.
    public static func sampleStandardDeviation(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        guard values.count >= 2 else {
            throw StatisticsError(.invalidArgument, "a sample standard deviation needs at least two values")
        }
        return (sumOfSquaredDeviations(values) / Double(values.count - 1)).squareRoot()
    }

    /// Smallest value.
    public static func minimum(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        return values.min() ?? .nan
    }

    /// Largest value.
    public static func maximum(_ values: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(values, "values")
        return values.max() ?? .nan
    }

    /// Ranks 1…n in input order; tied values share the average of the ranks they occupy (SciPy `rankdata`,
    /// method `average`).
    public static func ranks(_ values: [Double]) throws(StatisticsError) -> [Double] {
        try Validation.requireFiniteNonEmpty(values, "values")
        return rankWithTies(values).ranks
    }

    // MARK: - Internal helpers on validated input

    /// Mean of a non-empty list of finite values.
    static func meanOfValid(_ values: [Double]) -> Double {
        var sum = CompensatedSum()
        for value in values { sum.add(value) }
        return sum.total / Double(values.count)
    }

    /// `Σ (x − mean)²` of a non-empty list of finite values.
    static func sumOfSquaredDeviations(_ values: [Double]) -> Double {
        let centre = meanOfValid(values)
        var sum = CompensatedSum()
        for value in values {
            let deviation = value - centre
            sum.add(deviation * deviation)
        }
        return sum.total
    }

    /// NumPy's linear percentile of an ascending list; `q` in [0, 100].
    static func percentileOfSorted(_ sorted: [Double], _ q: Double) -> Double {
        let position = Double(sorted.count - 1) * (q / 100)
        let lowerIndex = position.rounded(.down)
        guard lowerIndex < Double(sorted.count - 1) else { return sorted[sorted.count - 1] }
        let index = Int(lowerIndex)
        let weight = position - lowerIndex
        let lower = sorted[index]
        let upper = sorted[index + 1]
        let span = upper - lower
        // NumPy interpolates from the nearer end, which keeps the result exact at both ends.
        return weight >= 0.5 ? upper - span * (1 - weight) : lower + span * weight
    }

    /// Average ranks (1-based) and the sizes of every group of tied values (groups of one included).
    static func rankWithTies(_ values: [Double]) -> (ranks: [Double], tieSizes: [Int]) {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var ranks = [Double](repeating: 0, count: values.count)
        var tieSizes: [Int] = []
        var start = 0
        while start < order.count {
            var end = start
            while end + 1 < order.count, values[order[end + 1]] == values[order[start]] { end += 1 }
            // Positions start…end (0-based) hold ranks start+1…end+1; their average is (start + end + 2)/2.
            let rank = Double(start + end + 2) / 2
            for position in start...end { ranks[order[position]] = rank }
            tieSizes.append(end - start + 1)
            start = end + 1
        }
        return (ranks, tieSizes)
    }
}
