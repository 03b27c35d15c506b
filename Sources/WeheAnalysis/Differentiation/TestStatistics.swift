/// Every number the current Wehe analyzer computes for one test (analysis.md section 2.1), before a client rule turns
/// them into a verdict. These are the contents of the reference's decision file.
public struct TestStatistics: Sendable, Hashable, Codable {
    /// `area_test = (m_R − m_O) / max(m_O, m_R)`, signed, in [−1, 1]; 0 when both means are 0.
    public var areaTest: Double
    /// `area = m_R − m_O`, Mbit/s.
    public var area: Double
    /// `ks2_ratio_test`, the jackknife ratio in [0, 1].
    public var ks2RatioTest: Double
    /// `ks2dVal`: KS statistic D on the positive samples.
    public var ksStatistic: Double
    /// `ks2pVal`: two-sided exact KS p-value on the positive samples.
    public var ksPValue: Double
    /// Mean KS statistic over the jackknife rounds.
    public var meanSubsetKSStatistic: Double
    /// Mean KS p-value over the jackknife rounds.
    public var meanSubsetKSPValue: Double
    /// Descriptive statistics of the original replay (zeros included).
    public var original: ThroughputSummary
    /// Descriptive statistics of the control replay (zeros included).
    public var control: ThroughputSummary
    /// Why the samples are too few for "no differentiation" ("too few measurements: …"), or `nil`. A result with a
    /// reason is inconclusive unless the rule finds differentiation (which a replay without positive sample never
    /// gives: its KS p-value is 1); see `DifferentiationAnalyzer.summary(for:)`.
    public var insufficientDataReason: String?
    /// Remarks that do not make the result inconclusive under every rule (for example: too few samples for the
    /// jackknife, ratio set to 0).
    public var remarks: [String]

    /// Creates statistics.
    public init(
        areaTest: Double,
        area: Double,
        ks2RatioTest: Double,
        ksStatistic: Double,
        ksPValue: Double,
        meanSubsetKSStatistic: Double,
        meanSubsetKSPValue: Double,
        original: ThroughputSummary,
        control: ThroughputSummary,
        insufficientDataReason: String? = nil,
        remarks: [String] = []
    ) {
        self.areaTest = areaTest
        self.area = area
        self.ks2RatioTest = ks2RatioTest
        self.ksStatistic = ksStatistic
        self.ksPValue = ksPValue
        self.meanSubsetKSStatistic = meanSubsetKSStatistic
        self.meanSubsetKSPValue = meanSubsetKSPValue
        self.original = original
        self.control = control
        self.insufficientDataReason = insufficientDataReason
        self.remarks = remarks
    }
}
