import WeheStatistics

/// The pre-September-2020 server statistic and its `processResult` decision, kept to compare old and new verdicts
/// (analysis.md section 2.2 and the legacy rows of section 8.1). Not used for any verdict we show.
///
/// Zeros are removed from both lists first and every number, means included, uses the positive samples. The area
/// is the integral between the two quantile functions (anchored at 0) from 0.001 to 1, divided by the smaller of the
/// two maxima; it is signed and not bounded by 1.
public struct LegacyAnalysis: Sendable, Hashable, Codable {
    /// Legacy `area_test`.
    public var areaTest: Double
    /// KS statistic on the positive samples.
    public var ksStatistic: Double
    /// KS p-value on the positive samples.
    public var ksPValue: Double
    /// Mean of the positive original samples, Mbit/s.
    public var originalMeanMbps: Double
    /// Mean of the positive control samples, Mbit/s.
    public var controlMeanMbps: Double
    /// The `processResult` decision with thresholds 0.1 / 0.05.
    public var decision: LegacyDecision

    /// Computes the legacy statistic.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for negative or non-finite values and
    ///   `.statisticsFailed` when a list has no positive sample (the legacy server failed there too).
    public static func compute(original: [Double], control: [Double]) throws(WeheAnalysisError) -> LegacyAnalysis {
        try SeriesValidation.checkThroughputs(original, role: "original")
        try SeriesValidation.checkThroughputs(control, role: "control")
        let originalPositive = original.filter { $0 > 0 }
        let controlPositive = control.filter { $0 > 0 }
        guard !originalPositive.isEmpty, !controlPositive.isEmpty else {
            throw WeheAnalysisError(.statisticsFailed, "the legacy statistic needs a positive sample in each replay")
        }
        let area: Double
        let ks: KolmogorovSmirnov.Result
        do {
            area = try Area.legacy(original: originalPositive, control: controlPositive)
            ks = try KolmogorovSmirnov.twoSample(originalPositive, controlPositive)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "legacy statistic failed: \(error.message)")
        }
        let originalMean = try StatisticsBridge.mean(originalPositive, of: "positive original samples")
        let controlMean = try StatisticsBridge.mean(controlPositive, of: "positive control samples")
        return LegacyAnalysis(
            areaTest: area, ksStatistic: ks.statistic, ksPValue: ks.pValue, originalMeanMbps: originalMean,
            controlMeanMbps: controlMean,
            decision: LegacyDecision.processResult(
                areaTest: area, ksPValue: ks.pValue, originalMeanMbps: originalMean, controlMeanMbps: controlMean)
        )
    }
}
