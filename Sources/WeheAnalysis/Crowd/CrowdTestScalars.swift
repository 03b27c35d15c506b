/// The per-test numbers the crowd-sourced analysis keeps (analysis.md section 4.3); everything else about a test is
/// dropped as soon as these are known, so millions of tests fit in memory.
public struct CrowdTestScalars: Sendable, Hashable, Codable {
    /// Mean original throughput, zeros included, Mbit/s.
    public var originalMeanMbps: Double
    /// Mean control throughput, zeros included, Mbit/s.
    public var controlMeanMbps: Double
    /// `|(m_R − m_O) / min(max O, max R)|` (infinite when a replay never exceeded 0 and the means differ; NaN
    /// when both are all zero, which never counts as positive).
    public var relativeDifference: Double
    /// Two-sample KS p-value on the full lists, zeros included.
    public var ksPValue: Double
    /// Jackknife ratio, or `nil` when it was not computed because the test cannot be positive anyway.
    public var jackknifeRatio: Double?

    /// Creates per-test numbers.
    public init(
        originalMeanMbps: Double,
        controlMeanMbps: Double,
        relativeDifference: Double,
        ksPValue: Double,
        jackknifeRatio: Double?
    ) {
        self.originalMeanMbps = originalMeanMbps
        self.controlMeanMbps = controlMeanMbps
        self.relativeDifference = relativeDifference
        self.ksPValue = ksPValue
        self.jackknifeRatio = jackknifeRatio
    }
}
