package import WeheCore

/// One test in full: metadata, the samples of every replay, and every analysis.
///
/// Written whole by the client (its own history) and by imports; read back whole by `ResultStore.test(_:)`.
package struct TestRecord: Sendable, Hashable, Codable {
    /// The test's key.
    package var key: TestKey
    /// Where, when and how the test ran.
    package var metadata: TestMetadata
    /// The replays, ordered by testID when read back.
    package var replays: [ReplayRecord]
    /// The analyses, ordered by compared testID when read back.
    package var analyses: [AnalysisRecord]
    /// The sensitive verdict of an interleaved test (issue 18), if it had one.
    package var sensitive: SensitiveSummary?

    /// Creates a test record.
    package init(
        key: TestKey, metadata: TestMetadata, replays: [ReplayRecord], analyses: [AnalysisRecord] = [],
        sensitive: SensitiveSummary? = nil
    ) {
        self.key = key
        self.metadata = metadata
        self.replays = replays
        self.analyses = analyses
        self.sensitive = sensitive
    }

    /// The replay with the given testID, if stored.
    package func replay(_ testID: Int) -> ReplayRecord? { replays.first { $0.key.testID == testID } }

    /// The analysis of the normal test (testID 1 against 0), if stored.
    package var mainAnalysis: AnalysisRecord? { analyses.first { $0.comparedTestID == 1 } }
}
