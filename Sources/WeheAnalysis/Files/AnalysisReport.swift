package import Foundation
package import WeheCore

/// The JSON-ready result of analysing one pair of sample files (`wehe analyze`).
///
/// Keys: `verdict` (`differentiation`, `no-differentiation`, `inconclusive` or `blocked`), `direction`
/// (`throttled`, `prioritized` or null), `area` (the signed `area_test`), `ksStatistic`, `ksPValue`, `ks2Ratio`,
/// `originalMeanMbps`, `controlMeanMbps`, `originalSamples`, `controlSamples`, `ruleSet`, `areaThreshold`,
/// `ksPValueThreshold`, `ratioThreshold` (null for the Android rule) and `note` (null unless something was unusual).
package struct AnalysisReport: Sendable, Hashable, Encodable {
    /// The verdict name.
    package var verdict: String
    /// `throttled` or `prioritized` for differentiation, else nil.
    package var direction: String?
    /// The signed `area_test`.
    package var area: Double
    /// KS statistic D on the positive samples.
    package var ksStatistic: Double
    /// KS p-value on the positive samples.
    package var ksPValue: Double
    /// Jackknife ratio.
    package var ks2Ratio: Double
    /// Mean original throughput, zeros included.
    package var originalMeanMbps: Double
    /// Mean control throughput, zeros included.
    package var controlMeanMbps: Double
    /// Number of original samples analysed.
    package var originalSamples: Int
    /// Number of control samples analysed.
    package var controlSamples: Int
    /// `android` or `ios`.
    package var ruleSet: String
    /// The area threshold applied.
    package var areaThreshold: Double
    /// The KS p-value threshold applied.
    package var ksPValueThreshold: Double
    /// The jackknife ratio threshold applied, nil for the Android rule.
    package var ratioThreshold: Double?
    /// Why the result is unusual (inconclusive reason), if so.
    package var note: String?

    /// Builds the report from a summary and the number of samples analysed per replay.
    package init(summary: AnalysisSummary, originalSamples: Int, controlSamples: Int) {
        verdict = summary.verdict.rawValue
        direction = summary.direction?.rawValue
        area = summary.areaTest
        ksStatistic = summary.ksStatistic
        ksPValue = summary.ksPValue
        ks2Ratio = summary.ks2RatioTest
        originalMeanMbps = summary.originalMeanMbps
        controlMeanMbps = summary.controlMeanMbps
        self.originalSamples = originalSamples
        self.controlSamples = controlSamples
        ruleSet = summary.thresholds.ruleSet
        areaThreshold = summary.thresholds.area
        ksPValueThreshold = summary.thresholds.ksPValue
        ratioThreshold = summary.thresholds.ks2Ratio
        note = summary.note
    }

    private enum CodingKeys: String, CodingKey {
        case verdict, direction, area, ksStatistic, ksPValue, ks2Ratio, originalMeanMbps, controlMeanMbps
        case originalSamples, controlSamples, ruleSet, areaThreshold, ksPValueThreshold, ratioThreshold, note
    }

    /// Encodes every key, writing `null` for absent optional values.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(verdict, forKey: .verdict)
        try container.encode(direction, forKey: .direction)
        try container.encode(area, forKey: .area)
        try container.encode(ksStatistic, forKey: .ksStatistic)
        try container.encode(ksPValue, forKey: .ksPValue)
        try container.encode(ks2Ratio, forKey: .ks2Ratio)
        try container.encode(originalMeanMbps, forKey: .originalMeanMbps)
        try container.encode(controlMeanMbps, forKey: .controlMeanMbps)
        try container.encode(originalSamples, forKey: .originalSamples)
        try container.encode(controlSamples, forKey: .controlSamples)
        try container.encode(ruleSet, forKey: .ruleSet)
        try container.encode(areaThreshold, forKey: .areaThreshold)
        try container.encode(ksPValueThreshold, forKey: .ksPValueThreshold)
        try container.encode(ratioThreshold, forKey: .ratioThreshold)
        try container.encode(note, forKey: .note)
    }

    /// The report as pretty-printed JSON with sorted keys. Non-finite numbers (which the analysis does not
    /// produce) would be written as the strings "NaN", "Infinity", "-Infinity" rather than failing.
    package func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }

    /// A few lines for people: the verdict, the means and the statistics.
    package var text: String {
        var verdictLine: String
        switch verdict {
        case Verdict.differentiation.rawValue:
            verdictLine = "Differentiation detected" + (direction.map { " (\($0))" } ?? "")
        case Verdict.noDifferentiation.rawValue:
            verdictLine = "No differentiation"
        case Verdict.blocked.rawValue:
            verdictLine = "Blocked"
        default:
            verdictLine = "Results inconclusive"
        }
        if let note { verdictLine += " - \(note)" }
        return [
            verdictLine,
            "original: \(format(originalMeanMbps, digits: 1)) Mbit/s mean over \(originalSamples) samples",
            "control:  \(format(controlMeanMbps, digits: 1)) Mbit/s mean over \(controlSamples) samples",
            "area test \(format(area, digits: 4)) (threshold \(format(areaThreshold, digits: 2))), "
                + "KS D \(format(ksStatistic, digits: 4)) p \(ksPValue) (threshold \(ksPValueThreshold)), "
                + "jackknife ratio \(format(ks2Ratio, digits: 2)), rules \(ruleSet)",
        ].joined(separator: "\n")
    }

    private func format(_ value: Double, digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
