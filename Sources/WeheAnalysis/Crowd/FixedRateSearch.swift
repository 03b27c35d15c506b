import WeheStatistics

/// The kernel-density search for a throughput rate that is common among original replays but not among control
/// replays (analysis.md section 4.6, SIGCOMM'19 `weheAnalysis.py`).
///
/// 1. *Sampling range* from a set of per-test means: drop the largest 1 %, take the centre of the rest and 1.5 times
///    its half-width; widen by 1 on each side when narrower than 1; clamp the left end at −1; ends rounded to 0.01.
/// 2. *Density* on the grid `left, left + 0.1, …` (below `right`) from a Gaussian kernel with a fixed bandwidth of
///    0.1 Mbit/s.
/// 3. *Threshold by simulation*: a synthetic set of the same size made of 2 % copies of one value on a uniform
///    background over the range; its highest peak density (among peaks above the uniform level), rounded to 0.01.
///    **Reference quirk kept on purpose:** the spike value is `(right − left) / 2`, not the midpoint
///    `(left + right) / 2`; it matches the reference's thresholds, and the spike merely has to exist somewhere for
///    the threshold to measure a 2 % cluster.
/// 4. *Peaks* are interior strict local maxima above the threshold; each extends left and right while the density
///    stays above it; overlapping ranges merge (the higher peak stays); ranges narrower than 0.5 are widened to
///    their centre ± 0.25. Deviation: the reference's leftward walk can run past the first grid point and wrap to
///    the last one; here it stops at the first grid point.
/// 5. Control means are searched with the *same* threshold; original peaks strictly inside a control range are
///    dropped.
public enum FixedRateSearch {
    /// Settings; defaults are the reference's.
    public struct Configuration: Sendable, Hashable, Codable {
        /// Kernel bandwidth, Mbit/s (0.1).
        public var bandwidth: Double
        /// Grid spacing, Mbit/s (0.1).
        public var gridStep: Double
        /// Fraction of largest values left out of the sampling range (0.01).
        public var droppedTopFraction: Double
        /// Ranges narrower than this (1) are widened by `widening` on each side.
        public var minimumSamplingWidth: Double
        /// See `minimumSamplingWidth` (1).
        public var widening: Double
        /// The left end of the range is never below this (−1).
        public var leftLimit: Double
        /// Fraction of the synthetic set placed on one value (0.02).
        public var spikeFraction: Double
        /// Peak ranges narrower than this (0.5) are widened to centre ± half of it.
        public var minimumPeakWidth: Double
        /// Grids are capped at this many points; wider ranges use a coarser step.
        public var maximumGridPoints: Int

        /// Creates a configuration.
        public init(
            bandwidth: Double = 0.1,
            gridStep: Double = 0.1,
            droppedTopFraction: Double = 0.01,
            minimumSamplingWidth: Double = 1,
            widening: Double = 1,
            leftLimit: Double = -1,
            spikeFraction: Double = 0.02,
            minimumPeakWidth: Double = 0.5,
            maximumGridPoints: Int = 20_000
        ) {
            self.bandwidth = bandwidth
            self.gridStep = gridStep
            self.droppedTopFraction = droppedTopFraction
            self.minimumSamplingWidth = minimumSamplingWidth
            self.widening = widening
            self.leftLimit = leftLimit
            self.spikeFraction = spikeFraction
            self.minimumPeakWidth = minimumPeakWidth
            self.maximumGridPoints = maximumGridPoints
        }

        /// Checks every value.
        /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration`.
        public func validated() throws(WeheAnalysisError) -> Configuration {
            let positives = [bandwidth, gridStep, minimumPeakWidth]
            let fractions = [droppedTopFraction, spikeFraction]
            guard positives.allSatisfy({ $0.isFinite && $0 > 0 }),
                fractions.allSatisfy({ $0.isFinite && $0 >= 0 && $0 < 1 }),
                minimumSamplingWidth.isFinite, minimumSamplingWidth >= 0, widening.isFinite, widening >= 0,
                leftLimit.isFinite, maximumGridPoints >= 3
            else {
                throw WeheAnalysisError(.invalidConfiguration, "invalid density-search settings \(self)")
            }
            return self
        }
    }

    /// A density peak and the range of values attributed to it.
    public struct Peak: Sendable, Hashable, Codable {
        /// Grid position of the peak, rounded to 0.01.
        public var rate: Double
        /// Density at the peak.
        public var density: Double
        /// Lower end of the range, rounded to 0.01.
        public var lower: Double
        /// Upper end of the range, rounded to 0.01.
        public var upper: Double

        /// Creates a peak.
        public init(rate: Double, density: Double, lower: Double, upper: Double) {
            self.rate = rate
            self.density = density
            self.lower = lower
            self.upper = upper
        }

        /// Whether `value` lies strictly inside the range.
        public func strictlyContains(_ value: Double) -> Bool { lower < value && value < upper }
        /// Whether `value` lies inside the range, ends included.
        public func contains(_ value: Double) -> Bool { lower <= value && value <= upper }
    }

    /// The result of steps 1-5.
    public struct Result: Sendable, Hashable, Codable {
        /// The density threshold.
        public var threshold: Double
        /// Original-replay peaks not explained by a control peak.
        public var peaks: [Peak]
    }

    /// Steps 1-5 on one set of per-test means. Returns `nil` for an empty set of original means.
    public static func search<G: RandomNumberGenerator>(
        originalMeans: [Double],
        controlMeans: [Double],
        configuration: Configuration = Configuration(),
        using generator: inout G
    ) -> Result? {
        guard let range = samplingRange(originalMeans, configuration: configuration) else { return nil }
        let threshold = simulatedThreshold(
            count: originalMeans.count, range: range, configuration: configuration, using: &generator)
        let originalPeaks = peaks(originalMeans, threshold: threshold, configuration: configuration)
        let controlPeaks = peaks(controlMeans, threshold: threshold, configuration: configuration)
        let unique = originalPeaks.filter { peak in !controlPeaks.contains { $0.strictlyContains(peak.rate) } }
        return Result(threshold: threshold, peaks: unique)
    }

    /// Step 1: the sampling range of a set of values, or `nil` when the set is empty or not finite.
    public static func samplingRange(
        _ values: [Double],
        configuration: Configuration = Configuration()
    ) -> (left: Double, right: Double)? {
        guard !values.isEmpty, values.allSatisfy(\.isFinite) else { return nil }
        let sorted = values.sorted()
        let dropped = Int((Double(sorted.count) * configuration.droppedTopFraction).rounded(.down))
        let kept = sorted.prefix(max(1, sorted.count - dropped))
        let low = kept.first ?? 0
        let high = kept.last ?? 0
        let centre = (high + low) / 2
        let halfWidth = 1.5 * (high - centre)
        var left = centre - halfWidth
        var right = centre + halfWidth
        if right - left < configuration.minimumSamplingWidth {
            left -= configuration.widening
            right += configuration.widening
        }
        left = max(left, configuration.leftLimit)
        return (round2(left), round2(right))
    }

    /// Step 3: the density threshold from a synthetic set of `count` values over `range`.
    public static func simulatedThreshold<G: RandomNumberGenerator>(
        count: Int,
        range: (left: Double, right: Double),
        configuration: Configuration = Configuration(),
        using generator: inout G
    ) -> Double {
        let total = max(count, 1)
        let spikeCount = Int((Double(total) * configuration.spikeFraction).rounded(.down))
        // Reference quirk: (right − left) / 2 rather than the midpoint (left + right) / 2.
        let spike = (range.right - range.left) / 2
        var synthetic = Array(repeating: spike, count: spikeCount)
        synthetic.reserveCapacity(total)
        let upper = max(range.right, range.left)
        for _ in spikeCount..<total {
            synthetic.append(Double.random(in: range.left...upper, using: &generator))
        }
        guard let syntheticRange = samplingRange(synthetic, configuration: configuration) else { return 0 }
        let densities = density(synthetic, range: syntheticRange, configuration: configuration).densities
        let width = syntheticRange.right - syntheticRange.left
        let uniformLevel = width > 0 ? 1 / width : 0
        var highest: Double?
        for index in interiorMaxima(densities) where densities[index] > uniformLevel {
            highest = max(highest ?? densities[index], densities[index])
        }
        return round2(highest ?? (densities.max() ?? 0))
    }

    /// Step 4: the peaks of a set of values above `threshold`, with merged and widened ranges, ascending.
    public static func peaks(
        _ values: [Double],
        threshold: Double,
        configuration: Configuration = Configuration()
    ) -> [Peak] {
        guard let range = samplingRange(values, configuration: configuration) else { return [] }
        let (grid, densities) = density(values, range: range, configuration: configuration)
        var found: [Peak] = []
        for index in interiorMaxima(densities) where densities[index] > threshold {
            var low = index
            while low > 0 && densities[low - 1] > threshold { low -= 1 }
            var high = index
            while high < densities.count - 1 && densities[high + 1] > threshold { high += 1 }
            found.append(
                Peak(
                    rate: round2(grid[index]), density: densities[index], lower: round2(grid[low]),
                    upper: round2(grid[high])))
        }
        var merged: [Peak] = []
        for peak in found.sorted(by: { $0.lower < $1.lower }) {
            if var last = merged.last, peak.lower <= last.upper {
                let keepNew = peak.density > last.density
                last.upper = max(last.upper, peak.upper)
                if keepNew {
                    last.rate = peak.rate
                    last.density = peak.density
                }
                merged[merged.count - 1] = last
            } else {
                merged.append(peak)
            }
        }
        return merged.map { peak in
            guard peak.upper - peak.lower < configuration.minimumPeakWidth else { return peak }
            let centre = (peak.lower + peak.upper) / 2
            var widened = peak
            widened.lower = round2(centre - configuration.minimumPeakWidth / 2)
            widened.upper = round2(centre + configuration.minimumPeakWidth / 2)
            return widened
        }
    }

    /// The grid and the kernel density on it.
    static func density(
        _ values: [Double],
        range: (left: Double, right: Double),
        configuration: Configuration
    ) -> (grid: [Double], densities: [Double]) {
        let width = range.right - range.left
        var step = configuration.gridStep
        if width / step > Double(configuration.maximumGridPoints) {
            step = width / Double(configuration.maximumGridPoints)
        }
        var grid: [Double] = []
        var index = 0
        while range.left + Double(index) * step < range.right {
            grid.append(range.left + Double(index) * step)
            index += 1
        }
        guard !grid.isEmpty, let kde = try? GaussianKDE(samples: values, bandwidth: configuration.bandwidth) else {
            return ([], [])
        }
        return (grid, kde.densities(at: grid))
    }

    /// Indices of interior strict local maxima.
    static func interiorMaxima(_ values: [Double]) -> [Int] {
        guard values.count >= 3 else { return [] }
        return (1..<(values.count - 1)).filter { values[$0] > values[$0 - 1] && values[$0] > values[$0 + 1] }
    }

    static func round2(_ value: Double) -> Double { (value * 100).rounded() / 100 }
}
