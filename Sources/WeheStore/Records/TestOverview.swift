package import WeheCore

/// One line of a person's history: a test without its samples.
package struct TestOverview: Sendable, Hashable, Codable {
    /// The test's key.
    package var key: TestKey
    /// Where, when and how the test ran.
    package var metadata: TestMetadata
    /// Mean throughput of the original replay, Mbit/s, once stored.
    package var originalMeanMbps: Double?
    /// Mean throughput of the control replay, Mbit/s, once stored.
    package var controlMeanMbps: Double?
    /// The normal analysis (testID 1 against 0), once stored.
    package var analysis: AnalysisSummary?
    /// The sensitive verdict of an interleaved test, if it had one: the history lists show it beside
    /// the published verdict.
    package var sensitive: SensitiveSummary?

    /// Creates an overview.
    package init(
        key: TestKey,
        metadata: TestMetadata,
        originalMeanMbps: Double?,
        controlMeanMbps: Double?,
        analysis: AnalysisSummary?,
        sensitive: SensitiveSummary? = nil
    ) {
        self.key = key
        self.metadata = metadata
        self.originalMeanMbps = originalMeanMbps
        self.controlMeanMbps = controlMeanMbps
        self.analysis = analysis
        self.sensitive = sensitive
    }
}
