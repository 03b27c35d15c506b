/// The numbers the analyzer computes for one test (original vs control), protocol.md section 9.3 and
/// analysis.md section 2.1, together with the verdict derived from them and the thresholds that were applied.
///
/// This is the shared currency between the analysis (which computes it), the store (which keeps it), the server
/// (which serves it as `singleResult`) and the client (which shows it).
public struct AnalysisSummary: Sendable, Hashable, Codable {
    /// `area_test`: (mean(control) − mean(original)) / max of the two means; positive ⇒ original slower.
    public var areaTest: Double
    /// `ks2_ratio_test`: the jackknife ratio in [0, 1].
    public var ks2RatioTest: Double
    /// `xput_avg_original`: mean original throughput, Mbit/s (zeros included).
    public var originalMeanMbps: Double
    /// `xput_avg_test`: mean control throughput, Mbit/s (zeros included).
    public var controlMeanMbps: Double
    /// `ks2dVal`: the two-sample KS statistic D on the positive samples.
    public var ksStatistic: Double
    /// `ks2pVal`: the two-sided KS p-value on the positive samples.
    public var ksPValue: Double
    /// The verdict under the applied thresholds.
    public var verdict: Verdict
    /// For `.differentiation`: throttled or prioritized.
    public var direction: DifferentiationDirection?
    /// The thresholds that produced `verdict`.
    public var thresholds: AppliedThresholds
    /// Why the verdict is inconclusive or why the statistics could not be computed, if so.
    public var note: String?

    /// Creates a summary.
    public init(
        areaTest: Double,
        ks2RatioTest: Double,
        originalMeanMbps: Double,
        controlMeanMbps: Double,
        ksStatistic: Double,
        ksPValue: Double,
        verdict: Verdict,
        direction: DifferentiationDirection?,
        thresholds: AppliedThresholds,
        note: String? = nil
    ) {
        self.areaTest = areaTest
        self.ks2RatioTest = ks2RatioTest
        self.originalMeanMbps = originalMeanMbps
        self.controlMeanMbps = controlMeanMbps
        self.ksStatistic = ksStatistic
        self.ksPValue = ksPValue
        self.verdict = verdict
        self.direction = direction
        self.thresholds = thresholds
        self.note = note
    }

    /// How every "too few measurements" note begins (`DifferentiationConfiguration.insufficientDataReason`).
    public static let insufficientDataPrefix = "too few measurements"

    /// Why the data cannot support a verdict, when that is why the verdict is inconclusive: the part of `note` that
    /// begins with `insufficientDataPrefix`; `nil` otherwise.
    public var insufficientDataReason: String? {
        guard verdict == .inconclusive, let note else { return nil }
        // The reason holds no "; " of its own: it ends where the next remark of the note begins.
        for remark in note.split(separator: "; ", omittingEmptySubsequences: true)
        where remark.hasPrefix(Self.insufficientDataPrefix) {
            return String(remark)
        }
        return nil
    }
}

/// The thresholds actually applied to reach a verdict (analysis.md Appendix B.3: record them with each result).
public struct AppliedThresholds: Sendable, Hashable, Codable {
    /// Area threshold as a fraction (0.5, or 0.3 above 10 Mbit/s with default thresholds).
    public var area: Double
    /// KS p-value threshold (0.01 by default).
    public var ksPValue: Double
    /// Jackknife ratio threshold, when the rule set uses it (iOS rule); `nil` otherwise.
    public var ks2Ratio: Double?
    /// Name of the rule set (`"android"` or `"ios"`).
    public var ruleSet: String

    /// Creates applied thresholds.
    public init(area: Double, ksPValue: Double, ks2Ratio: Double?, ruleSet: String) {
        self.area = area
        self.ksPValue = ksPValue
        self.ks2Ratio = ks2Ratio
        self.ruleSet = ruleSet
    }
}

/// The numbers of a WeHeY localization (protocol.md section 12.7, analysis.md sections 6.3-6.5) and its verdict.
public struct LocalizationSummary: Sendable, Hashable, Codable {
    /// Throughput-sum test: Mann-Whitney U₁ of the observed differences against T_diff; `nil` if not run.
    public var mwuStatistic: Double?
    /// Throughput-sum test: one-sided p-value; `nil` if not run.
    public var mwuPValue: Double?
    /// Mean throughput of each simultaneous replay, Mbit/s.
    public var simultaneousMeansMbps: [Double]
    /// Mean of the summed simultaneous throughput, Mbit/s.
    public var sumMeanMbps: Double?
    /// Mean of the single-server replay, Mbit/s.
    public var singleMeanMbps: Double?
    /// Loss-correlation test: interval sizes (seconds) that had enough intervals.
    public var intervalSizes: [Double]
    /// Loss-correlation test: one-sided Spearman p-value per interval size.
    public var correlationPValues: [Double]
    /// Average loss ratio on each branch over the whole replay.
    public var averageLoss: [Double]
    /// The verdict.
    public var verdict: LocalizationVerdict
    /// Why the verdict is inconclusive, if so.
    public var note: String?
    /// The merge-point queue signal beside the published verdict (our extension; `nil` when not measured).
    public var mergePointQueue: MergePointQueueSummary?

    /// Creates a localization summary.
    public init(
        mwuStatistic: Double?,
        mwuPValue: Double?,
        simultaneousMeansMbps: [Double],
        sumMeanMbps: Double?,
        singleMeanMbps: Double?,
        intervalSizes: [Double],
        correlationPValues: [Double],
        averageLoss: [Double],
        verdict: LocalizationVerdict,
        note: String? = nil,
        mergePointQueue: MergePointQueueSummary? = nil
    ) {
        self.mergePointQueue = mergePointQueue
        self.mwuStatistic = mwuStatistic
        self.mwuPValue = mwuPValue
        self.simultaneousMeansMbps = simultaneousMeansMbps
        self.sumMeanMbps = sumMeanMbps
        self.singleMeanMbps = singleMeanMbps
        self.intervalSizes = intervalSizes
        self.correlationPValues = correlationPValues
        self.averageLoss = averageLoss
        self.verdict = verdict
        self.note = note
    }
}
