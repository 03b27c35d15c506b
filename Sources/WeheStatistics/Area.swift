/// The area statistic of the Wehe per-test analysis: how much faster the control replay was than the original.
///
/// Positive values mean the control (`R`) was faster, i.e. the original (`O`) was slowed down.
public enum Area {
    /// The current statistic (analysis.md §2.1): `(mean(R) − mean(O)) / max(mean(O), mean(R))`, zeros included.
    /// It lies in [−1, 1] for non-negative throughputs.
    /// - Throws: `emptySample`, `nonFiniteValue`, or `invalidArgument` when both means are ≤ 0 (the ratio is
    ///   undefined).
    public static func current(original: [Double], control: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFiniteNonEmpty(original, "original")
        try Validation.requireFiniteNonEmpty(control, "control")
        let meanOriginal = Descriptive.meanOfValid(original)
        let meanControl = Descriptive.meanOfValid(control)
        let larger = max(meanOriginal, meanControl)
        guard larger > 0 else {
            throw StatisticsError(.invalidArgument, "both means are \(larger); the area ratio is undefined")
        }
        return (meanControl - meanOriginal) / larger
    }

    /// The legacy statistic (analysis.md §2.2, used until August 2020): values ≤ 0 are removed, each list becomes
    /// its quantile function `Q`, the piecewise-linear curve through (0, 0), (1/n, x₍₁₎), …, (1, x₍ₙ₎), and the
    /// result is `∫_{0.001}^{1} (Q_R − Q_O) dp / min(max O⁺, max R⁺)`, integrated exactly. It is signed and not
    /// bounded by 1.
    /// - Throws: `emptySample` when either list has no positive value, `nonFiniteValue` for NaN or infinities.
    public static func legacy(original: [Double], control: [Double]) throws(StatisticsError) -> Double {
        try Validation.requireFinite(original, "original")
        try Validation.requireFinite(control, "control")
        let positiveOriginal = original.filter { $0 > 0 }.sorted()
        let positiveControl = control.filter { $0 > 0 }.sorted()
        guard let topOriginal = positiveOriginal.last else {
            throw StatisticsError(.emptySample, "original has no positive value")
        }
        guard let topControl = positiveControl.last else {
            throw StatisticsError(.emptySample, "control has no positive value")
        }
        let area = quantileIntegral(positiveControl) - quantileIntegral(positiveOriginal)
        return area / min(topOriginal, topControl)
    }

    /// The lower limit of the legacy integral.
    static let legacyLowerLimit = 0.001

    /// `∫_{0.001}^{1} Q(p) dp` for the quantile curve of an ascending, non-empty list.
    static func quantileIntegral(_ sorted: [Double]) -> Double {
        let n = Double(sorted.count)
        var sum = CompensatedSum()
        var previousValue = 0.0
        for (index, value) in sorted.enumerated() {
            let start = Double(index) / n
            let end = Double(index + 1) / n
            defer { previousValue = value }
            if end <= legacyLowerLimit { continue }
            var lower = start
            var lowerValue = previousValue
            if start < legacyLowerLimit {
                lower = legacyLowerLimit
                lowerValue = previousValue + (value - previousValue) * (legacyLowerLimit - start) * n
            }
            sum.add((end - lower) * (lowerValue + value) / 2)
        }
        return sum.total
    }
}
