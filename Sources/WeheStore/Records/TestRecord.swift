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
    /// The sensitive verdict of an interleaved test, if it had one.
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

    /// "time limit: the original replay was stopped after 45 s; the verdicts judge the part it covered" when the
    /// client stopped a replay of this test at the time limit; `nil` when none was or it is not
    /// known.
    package var timeLimitNote: String? {
        let parts = replays.filter { $0.reachedTimeLimit == true }.map { replay in
            var part = "the \(replay.key.testID == 0 ? "original" : "control") replay was stopped"
            if let seconds = replay.clientDurationSeconds, seconds.isFinite {
                let tenths = (seconds * 10).rounded() / 10
                part += " after \(tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)) s"
            }
            return part
        }
        guard !parts.isEmpty else { return nil }
        let it = parts.count == 1 ? "it" : "they"
        return "time limit: " + parts.joined(separator: "; ") + "; the verdicts judge the part \(it) covered"
    }
}
