import WeheCore
import WeheStore

extension ResultRecords {
    /// The original replay's mean as shown: the analysis's, `nil` when the replay has no stored sample (not
    /// measured, which a 0 would hide); a blocked port keeps its 0.
    static func originalMean(_ row: TestOverview) -> Double? {
        MeasuredMean.value(
            row.analysis?.originalMeanMbps ?? row.originalMeanMbps, samples: row.originalMeanMbps == nil ? 0 : 1,
            verdict: row.analysis?.verdict)
    }

    /// The control replay's mean as shown: the analysis's, `nil` when the replay has no stored sample.
    static func controlMean(_ row: TestOverview) -> Double? {
        MeasuredMean.value(
            row.analysis?.controlMeanMbps ?? row.controlMeanMbps, samples: row.controlMeanMbps == nil ? 0 : 1,
            verdict: row.analysis?.verdict)
    }
}
