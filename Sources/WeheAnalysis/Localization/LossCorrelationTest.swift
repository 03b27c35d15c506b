import WeheStatistics

/// WeHeY test 2, `loss_correlation` (analysis.md section 6.4): do the two branches lose data at the same times?
///
/// A policer shared by all of one service's traffic inside the access network drops packets of both simultaneous
/// replays together. For each interval size `round(minRTT·i, 3)`, `i = 10…50`, that still gives at least 30
/// intervals, the per-interval loss ratios of the two branches are joined on the interval label, runs of loss-free
/// rows are collapsed to their first row, and a one-sided ("positive") Spearman correlation gives a p-value. Sizes
/// whose p-value is NaN (constant input, too few rows) are discarded.
public enum LossCorrelationTest {
    /// Settings; the defaults are the reference's.
    public struct Configuration: Sendable, Hashable, Codable {
        /// Interval sizes as multiples of the minimum RTT (10…50).
        public var multiples: ClosedRange<Int>
        /// An interval size is used only if the duration holds at least this many intervals (30).
        public var minimumIntervals: Double
        /// An interval needs at least this many timeline samples (11: the reference drops intervals with ≤ 10
        /// packets).
        public var minimumSamplesPerInterval: Int

        /// Creates a configuration.
        public init(
            multiples: ClosedRange<Int> = 10...50,
            minimumIntervals: Double = 30,
            minimumSamplesPerInterval: Int = 11
        ) {
            self.multiples = multiples
            self.minimumIntervals = minimumIntervals
            self.minimumSamplesPerInterval = minimumSamplesPerInterval
        }
    }

    /// The test's numbers.
    public struct Result: Sendable, Hashable, Codable {
        /// Interval sizes, seconds, that produced a p-value (parallel to `pValues`).
        public var intervalSizes: [Double]
        /// One-sided Spearman p-value per kept interval size.
        public var pValues: [Double]
        /// Lost bytes / sent bytes over the whole replay, per branch.
        public var averageLoss: [Double]
    }

    /// The interval sizes to try: `round(minRTT·i, 3)` for each multiple `i` with `duration / (minRTT·i) ≥ 30`.
    public static func intervalSizes(
        minimumRTT: Double,
        duration: Double,
        configuration: Configuration = Configuration()
    ) -> [Double] {
        guard minimumRTT.isFinite, minimumRTT > 0, duration.isFinite, duration > 0 else { return [] }
        return configuration.multiples.compactMap { multiple in
            let size = minimumRTT * Double(multiple)
            guard duration / size >= configuration.minimumIntervals else { return nil }
            return (size * 1000).rounded() / 1000
        }
    }

    /// Keeps every row where either side lost something and, of each run of consecutive loss-free rows, only the
    /// first (analysis.md section 6.4 item 6).
    public static func collapse(_ first: [Double], _ second: [Double]) -> (first: [Double], second: [Double]) {
        var keptFirst: [Double] = []
        var keptSecond: [Double] = []
        var previousWasLossFree = false
        for (a, b) in zip(first, second) {
            let lossFree = a == 0 && b == 0
            if !(lossFree && previousWasLossFree) {
                keptFirst.append(a)
                keptSecond.append(b)
            }
            previousWasLossFree = lossFree
        }
        return (keptFirst, keptSecond)
    }

    /// Collapses the joined loss ratios and returns the one-sided Spearman correlation and its p-value (NaN when
    /// undefined: constant input, fewer than three rows, or lists of different lengths or with non-finite values).
    public static func correlation(_ first: [Double], _ second: [Double]) -> (rho: Double, pValue: Double) {
        let (a, b) = collapse(first, second)
        guard a.count >= 3, let result = try? Spearman.correlation(a, b, alternative: .greater) else {
            return (.nan, .nan)
        }
        return (result.rho, result.pValue)
    }

    /// Runs the test on two branches.
    /// - Returns: `nil` when no interval size qualifies (the reference then leaves the test out of the result);
    ///   otherwise the kept sizes and p-values, possibly empty (for example when neither branch lost anything).
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for a minimum RTT or duration that is not a positive
    ///   finite number.
    public static func run(
        first: LossBranch,
        second: LossBranch,
        configuration: Configuration = Configuration()
    ) throws(WeheAnalysisError) -> Result? {
        for (index, branch) in [first, second].enumerated() {
            guard branch.minimumRTT.isFinite, branch.minimumRTT > 0 else {
                throw WeheAnalysisError(.invalidSample, "branch \(index + 1): minimum RTT must be positive")
            }
            guard branch.duration.isFinite, branch.duration >= 0 else {
                throw WeheAnalysisError(.invalidSample, "branch \(index + 1): duration must be a non-negative number")
            }
        }
        let minimumRTT = max(first.minimumRTT, second.minimumRTT)
        let duration = min(first.duration, second.duration)
        let sizes = intervalSizes(minimumRTT: minimumRTT, duration: duration, configuration: configuration)
        guard !sizes.isEmpty else { return nil }
        var keptSizes: [Double] = []
        var pValues: [Double] = []
        for size in sizes {
            let a = first.timeline.intervalLossRatios(
                size: size, minimumSamples: configuration.minimumSamplesPerInterval)
            let b = second.timeline.intervalLossRatios(
                size: size, minimumSamples: configuration.minimumSamplesPerInterval)
            guard !a.isEmpty, !b.isEmpty else { continue }
            let secondByLabel = Dictionary(b.map { ($0.endMilliseconds, $0.ratio) }, uniquingKeysWith: { x, _ in x })
            var joinedFirst: [Double] = []
            var joinedSecond: [Double] = []
            for row in a {
                guard let other = secondByLabel[row.endMilliseconds] else { continue }
                joinedFirst.append(row.ratio)
                joinedSecond.append(other)
            }
            let pValue = correlation(joinedFirst, joinedSecond).pValue
            guard !pValue.isNaN else { continue }
            keptSizes.append(size)
            pValues.append(pValue)
        }
        return Result(
            intervalSizes: keptSizes, pValues: pValues,
            averageLoss: [first.timeline.averageLoss, second.timeline.averageLoss]
        )
    }
}
