/// The paired sign-flip (randomization) test of "the differences are centred on zero", with exact enumeration of
/// every sign vector, and the confidence interval for a location shift obtained by inverting it.
///
/// Use: `n` pairs whose two members were assigned to two exchangeable slots by a fair coin (which member of a pair
/// ran first). Under the null hypothesis that the labels do not matter, every one of the `2ⁿ` sign vectors of the
/// differences is equally likely, so the p-value below is exact: `P(p ≤ α) ≤ α` for every α, whatever the
/// distribution of the differences and however the slots' conditions drift from pair to pair (a busy link, an
/// autocorrelated rate). No normality, independence of the slots or equal variances is assumed.
///
/// Statistic: `T = Σ dᵢ`. For a sign vector `s`, `T_s = Σ sᵢ dᵢ`. The `2ⁿ` values are formed as the sums of the
/// `2^⌊n/2⌋` partial sums of the first half and the `2^⌈n/2⌉` of the second (each evaluated left to right), so the
/// reference script `scripts/golden_statistics.py` reproduces every double exactly. Two values closer than
/// `tolerance = 1e-9 · Σ|dᵢ|` count as tied (ties go in the p-value's favour of the null).
public enum SignFlipTest {
    /// The largest number of pairs enumerated exactly (`2²⁴` sign vectors, about 16.8 million sums).
    public static let maximumExactPairs = 24

    /// The outcome of one test.
    public struct Result: Sendable, Hashable {
        /// `Σ dᵢ` (the observed statistic).
        public var sum: Double
        /// `Σ dᵢ / n`.
        public var mean: Double
        /// The exact p-value under the chosen alternative.
        public var pValue: Double
        /// The number of pairs.
        public var count: Int
        /// The smallest p-value this many pairs can give under the alternative (`1/2ⁿ` one-sided, `2/2ⁿ`
        /// two-sided): a test whose threshold lies below it can never reject.
        public var smallestPossiblePValue: Double
    }

    /// A confidence interval for the location shift `δ` of the differences (the set of `δ` whose two one-sided
    /// tests of `dᵢ − δ`, each at `(1 − level)/2`, do not reject).
    public struct Interval: Sendable, Hashable {
        /// The lower bound (`-infinity` when no shift can be rejected from below with this few pairs).
        public var lower: Double
        /// The upper bound (`+infinity` likewise).
        public var upper: Double
    }

    /// Runs the test on the paired differences `differences` (e.g. the log ratio of the app's to the control's
    /// throughput in each round).
    /// - Throws: `StatisticsError` `.emptySample`, `.nonFiniteValue`, or `.invalidArgument` above
    ///   `maximumExactPairs` pairs.
    public static func test(_ differences: [Double], alternative: Alternative = .twoSided) throws(StatisticsError)
        -> Result
    {
        try Validation.requireFiniteNonEmpty(differences, "differences")
        guard differences.count <= maximumExactPairs else {
            throw StatisticsError(
                .invalidArgument, "\(differences.count) pairs: at most \(maximumExactPairs) are enumerated exactly")
        }
        let table = SumTable(differences)
        let total = Double(1 << differences.count)
        let count = table.count(alternative)
        return Result(
            sum: table.observed, mean: table.observed / Double(differences.count), pValue: Double(count) / total,
            count: differences.count, smallestPossiblePValue: (alternative == .twoSided ? 2 : 1) / total)
    }

    /// The `level` confidence interval for the shift, by bisection on `δ` between the smallest and the largest
    /// difference (100 halvings, or until the bracket stops shrinking).
    ///
    /// No shift below the smallest difference is kept when `1/2ⁿ` is at most the tail: there every `dᵢ − δ` is
    /// positive and only the all-plus sign vector reaches the observed sum. So when the test keeps the smallest
    /// difference, it is the lower bound (and the largest the upper bound); the bounds are open only when `n` is too
    /// small for the level (`1/2ⁿ` above the tail). In exact terms the lower bound is the k-th smallest mean of the
    /// 2ⁿ − 1 non-empty subsets of the differences, k = ⌊tail·2ⁿ − 1⌋ + 1 (the golden file is computed that way).
    /// - Throws: as `test`, and `.invalidArgument` for a level outside (0, 1).
    public static func confidenceInterval(_ differences: [Double], level: Double = 0.95) throws(StatisticsError)
        -> Interval
    {
        try Validation.requireFiniteNonEmpty(differences, "differences")
        guard level > 0, level < 1 else {
            throw StatisticsError(.invalidArgument, "confidence level \(level) is not in (0, 1)")
        }
        guard differences.count <= maximumExactPairs else {
            throw StatisticsError(
                .invalidArgument, "\(differences.count) pairs: at most \(maximumExactPairs) are enumerated exactly")
        }
        let tail = (1 - level) / 2
        let total = Double(1 << differences.count)
        guard let low = differences.min(), let high = differences.max() else {
            return Interval(lower: -.infinity, upper: .infinity)
        }
        // Whether the one-sided test of `d − δ` keeps δ (p above the tail).
        func keeps(_ delta: Double, _ alternative: Alternative) -> Bool {
            let table = SumTable(differences.map { $0 - delta })
            return Double(table.count(alternative)) / total > tail
        }
        // Equal differences: any other shift puts them all on one side, where one side's p-value is 1/2ⁿ.
        if low == high {
            return 1 / total <= tail
                ? Interval(lower: low, upper: high) : Interval(lower: -.infinity, upper: .infinity)
        }
        // Whether any bound can be finite at this level (see above).
        let closable = 1 / total <= tail
        var lower = closable ? low : -Double.infinity
        if !keeps(low, .greater) {
            var rejected = low
            var kept = high
            for _ in 0..<100 {
                let middle = rejected + (kept - rejected) / 2
                if middle <= rejected || middle >= kept { break }
                if keeps(middle, .greater) { kept = middle } else { rejected = middle }
            }
            lower = kept
        }
        var upper = closable ? high : Double.infinity
        if !keeps(high, .less) {
            var kept = low
            var rejected = high
            for _ in 0..<100 {
                let middle = kept + (rejected - kept) / 2
                if middle <= kept || middle >= rejected { break }
                if keeps(middle, .less) { kept = middle } else { rejected = middle }
            }
            upper = kept
        }
        return Interval(lower: lower, upper: upper)
    }

    /// Every signed sum, as two sorted tables of half sums.
    private struct SumTable {
        var first: [Double]
        var second: [Double]
        var observed: Double
        var tolerance: Double

        init(_ values: [Double]) {
            let split = values.count / 2
            first = Self.halfSums(Array(values[..<split]))
            let unsorted = Self.halfSums(Array(values[split...]))
            second = unsorted.sorted()
            observed = first[0] + unsorted[0]
            var magnitude = 0.0
            for value in values { magnitude += abs(value) }
            tolerance = 1e-9 * magnitude
        }

        /// The `2ᵐ` signed sums of `values`, in the order of the sign vectors read as binary numbers (bit k set ⇒
        /// value k negated); entry 0 is the all-plus sum. Each sum is evaluated left to right.
        static func halfSums(_ values: [Double]) -> [Double] {
            let count = 1 << values.count
            var sums = [Double](repeating: 0, count: count)
            for mask in 0..<count {
                var sum = 0.0
                for (index, value) in values.enumerated() {
                    sum += (mask >> index) & 1 == 1 ? -value : value
                }
                sums[mask] = sum
            }
            return sums
        }

        /// How many of the signed sums are at least as extreme as the observed one.
        func count(_ alternative: Alternative) -> Int {
            var count = 0
            switch alternative {
            case .greater:
                let threshold = observed - tolerance
                for a in first { count += second.count - lowerBound(threshold - a) }
            case .less:
                let threshold = observed + tolerance
                for a in first { count += upperBound(threshold - a) }
            case .twoSided:
                let threshold = abs(observed) - tolerance
                if threshold <= 0 { return first.count * second.count }
                for a in first {
                    count += second.count - lowerBound(threshold - a)
                    count += upperBound(-threshold - a)
                }
            }
            return count
        }

        /// The first index whose value is ≥ `value` (numpy `searchsorted(side="left")`).
        func lowerBound(_ value: Double) -> Int {
            var low = 0
            var high = second.count
            while low < high {
                let middle = (low + high) / 2
                if second[middle] < value { low = middle + 1 } else { high = middle }
            }
            return low
        }

        /// The first index whose value is > `value` (numpy `searchsorted(side="right")`).
        func upperBound(_ value: Double) -> Int {
            var low = 0
            var high = second.count
            while low < high {
                let middle = (low + high) / 2
                if second[middle] <= value { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }
}
