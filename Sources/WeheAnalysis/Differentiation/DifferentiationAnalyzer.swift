public import WeheCore
package import WeheStatistics

/// The per-test differentiation analysis: original and control throughput samples in, `AnalysisSummary` out
/// (analysis.md sections 2.1 and 2.4, protocol.md section 9.5).
///
/// Steps, following the current Wehe server (`O` original, `R` control, `O⁺`/`R⁺` their samples > 0):
/// 1. means with zeros, `area_test = (m_R − m_O) / max(m_O, m_R)`;
/// 2. exact two-sided two-sample KS test on `O⁺` vs `R⁺` (asymptotic beyond 1000 × 1000 values of unequal
///    sizes: `kolmogorovSmirnovMethod`);
/// 3. jackknife ratio over 100 rounds of half-size subsets of `O` and `R` (zeros included), with an injected
///    random number generator so results are reproducible;
/// 4. the configured client rule (`VerdictRules`) turns the numbers into a verdict.
///
/// Explicit rule for too few measurements (protocol.md section 17 item 13, and our minimum of
/// `DifferentiationConfiguration.minimumPositiveSamples`): the reference crashes on an empty KS input and never
/// answers, and gives a verdict on two samples; here the result is *inconclusive* with a note saying which replay had
/// too few positive samples ("too few measurements: …"). A replay without any positive sample gets `ks2pVal = 1`,
/// `ks2dVal = 0`, ratio 0; one with a few gets its real KS numbers; the means and area are computed as usual (an
/// empty or all-zero list counts as ten zeros, like the reference). Malformed input (NaN, infinity, negative
/// throughput, throughput and time lists of different lengths) throws instead.
public struct DifferentiationAnalyzer: Sendable {
    /// The configuration in force.
    public let configuration: DifferentiationConfiguration
    /// The KS method of steps 2 and 3: exact up to `KolmogorovSmirnov.analysisExactCells` (n1·n2, unequal sizes),
    /// asymptotic beyond, so that an upload's sample count cannot make the analysis quadratic. Benchmarks set
    /// `.auto` to measure the unbounded cost.
    package var kolmogorovSmirnovMethod = StatisticsBridge.ksMethod

    /// Creates an analyzer.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for an invalid configuration.
    public init(
        configuration: DifferentiationConfiguration = DifferentiationConfiguration()
    ) throws(WeheAnalysisError) {
        self.configuration = try configuration.validated()
    }

    /// Analyses one test and applies the configured client rule.
    /// - Parameters:
    ///   - original: samples of the original replay (testID 0).
    ///   - control: samples of the control replay (testID 1, or the DPI probe).
    ///   - generator: the random source of the jackknife subsets.
    /// - Throws: `WeheAnalysisError` with code `.mismatchedLengths`, `.invalidSample` or `.invalidTimes` for
    ///   malformed series, `.statisticsFailed` if a statistics routine rejects its input.
    public func analyze<G: RandomNumberGenerator>(
        original: ThroughputSeries,
        control: ThroughputSeries,
        using generator: inout G
    ) throws(WeheAnalysisError) -> AnalysisSummary {
        summary(for: try statistics(original: original, control: control, using: &generator))
    }

    /// Analyses one test with a generator seeded by `seed`: the same inputs and seed give the same summary.
    /// - Throws: as `analyze(original:control:using:)`.
    public func analyze(
        original: ThroughputSeries,
        control: ThroughputSeries,
        seed: UInt64
    ) throws(WeheAnalysisError) -> AnalysisSummary {
        var generator = SeededGenerator(seed: seed)
        return try analyze(original: original, control: control, using: &generator)
    }

    /// Computes the analyzer's numbers with a generator seeded by `seed`; `summary(for:)` of the result equals
    /// `analyze(original:control:seed:)`.
    /// - Throws: as `analyze(original:control:using:)`.
    public func statistics(
        original: ThroughputSeries,
        control: ThroughputSeries,
        seed: UInt64
    ) throws(WeheAnalysisError) -> TestStatistics {
        var generator = SeededGenerator(seed: seed)
        return try statistics(original: original, control: control, using: &generator)
    }

    /// Computes the analyzer's numbers without applying a client rule.
    /// - Throws: as `analyze(original:control:using:)`.
    public func statistics<G: RandomNumberGenerator>(
        original: ThroughputSeries,
        control: ThroughputSeries,
        using generator: inout G
    ) throws(WeheAnalysisError) -> TestStatistics {
        var originalValues = try SeriesValidation.validated(original, role: "original").mbps
        var controlValues = try SeriesValidation.validated(control, role: "control").mbps
        if configuration.dropsLastSample {
            originalValues = Array(originalValues.dropLast())
            controlValues = Array(controlValues.dropLast())
        }
        return try statistics(originalValues: originalValues, controlValues: controlValues, using: &generator)
    }

    /// Computes the analyzer's numbers from bare Mbit/s lists (no trimming applied).
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for a negative or non-finite value and
    ///   `.statisticsFailed` if a statistics routine rejects its input.
    public func statistics<G: RandomNumberGenerator>(
        originalValues: [Double],
        controlValues: [Double],
        using generator: inout G
    ) throws(WeheAnalysisError) -> TestStatistics {
        try SeriesValidation.checkThroughputs(originalValues, role: "original")
        try SeriesValidation.checkThroughputs(controlValues, role: "control")
        let originalPositive = originalValues.filter { $0 > 0 }
        let controlPositive = controlValues.filter { $0 > 0 }
        // The reference replaces a list without positive sample by ten zeros before computing anything.
        let originalList = originalPositive.isEmpty ? Array(repeating: 0.0, count: 10) : originalValues
        let controlList = controlPositive.isEmpty ? Array(repeating: 0.0, count: 10) : controlValues
        let originalSummary = try StatisticsBridge.summarize(originalList, of: "original")
        let controlSummary = try StatisticsBridge.summarize(controlList, of: "control")
        let area = controlSummary.mean - originalSummary.mean
        let largerMean = max(originalSummary.mean, controlSummary.mean)
        let areaTest = largerMean > 0 ? area / largerMean : 0

        if originalPositive.isEmpty || controlPositive.isEmpty {
            let reason =
                configuration.insufficientDataReason(originalValues: originalValues, controlValues: controlValues)
                ?? "\(AnalysisSummary.insufficientDataPrefix): a replay has no positive throughput sample"
            return TestStatistics(
                areaTest: areaTest, area: area, ks2RatioTest: 0, ksStatistic: 0, ksPValue: 1,
                meanSubsetKSStatistic: 0, meanSubsetKSPValue: 1, original: originalSummary, control: controlSummary,
                insufficientDataReason: reason
            )
        }

        let ks = try StatisticsBridge.kolmogorovSmirnov(
            originalPositive, controlPositive, of: "positive samples", method: kolmogorovSmirnovMethod)
        var remarks: [String] = []
        let jackknife = try Jackknife.compute(
            originalList, controlList, fullPValue: ks.pValue, rounds: configuration.jackknifeRounds,
            fraction: configuration.jackknifeFraction, pThreshold: configuration.jackknifePThreshold,
            method: kolmogorovSmirnovMethod, using: &generator
        )
        if jackknife == nil {
            remarks.append("too few samples for the jackknife; ks2_ratio_test set to 0")
        }
        return TestStatistics(
            areaTest: areaTest, area: area, ks2RatioTest: jackknife?.ratio ?? 0, ksStatistic: ks.statistic,
            ksPValue: ks.pValue, meanSubsetKSStatistic: jackknife?.meanStatistic ?? 0,
            meanSubsetKSPValue: jackknife?.meanPValue ?? 1, original: originalSummary, control: controlSummary,
            insufficientDataReason: configuration.insufficientDataReason(
                originalValues: originalValues, controlValues: controlValues),
            remarks: remarks
        )
    }

    /// Applies the configured client rule to computed statistics, then the sample minimum: statistics with an
    /// insufficient-data reason are inconclusive, with that reason first in the note, unless the rule finds
    /// differentiation. The exact KS p-value accounts for small samples, so a differentiation it supports stands; a
    /// "no differentiation" (or an unexplained "inconclusive") on too few measurements would claim what the data
    /// cannot show.
    public func summary(for statistics: TestStatistics) -> AnalysisSummary {
        let originalMean = statistics.original.mean
        let controlMean = statistics.control.mean
        var decision = configuration.rules.decide(
            areaTest: statistics.areaTest, ksPValue: statistics.ksPValue, ks2Ratio: statistics.ks2RatioTest,
            originalMeanMbps: originalMean, controlMeanMbps: controlMean)
        var notes = statistics.remarks
        if let reason = statistics.insufficientDataReason, decision.verdict != .differentiation {
            decision = VerdictDecision(verdict: .inconclusive, direction: nil, thresholds: decision.thresholds)
            notes.insert(reason, at: 0)
        }
        return AnalysisSummary(
            areaTest: statistics.areaTest, ks2RatioTest: statistics.ks2RatioTest, originalMeanMbps: originalMean,
            controlMeanMbps: controlMean, ksStatistic: statistics.ksStatistic, ksPValue: statistics.ksPValue,
            verdict: decision.verdict, direction: decision.direction, thresholds: decision.thresholds,
            note: notes.isEmpty ? nil : notes.joined(separator: "; ")
        )
    }

    /// The result a client builds by itself when the tested port could not be reached (analysis.md section 1.8):
    /// area, KS p-value, KS statistic and ratio −1, original throughput 0, control throughput the port-443 mean, and
    /// the verdict `.blocked` (reported as differentiation).
    public func portBlockedSummary(controlMeanMbps: Double) -> AnalysisSummary {
        let control = controlMeanMbps.isFinite && controlMeanMbps >= 0 ? controlMeanMbps : 0
        return AnalysisSummary(
            areaTest: -1, ks2RatioTest: -1, originalMeanMbps: 0, controlMeanMbps: control, ksStatistic: -1,
            ksPValue: -1, verdict: .blocked, direction: nil,
            thresholds: configuration.rules.appliedThresholds(originalMeanMbps: 0, controlMeanMbps: control),
            note: "the tested port is blocked"
        )
    }
}
