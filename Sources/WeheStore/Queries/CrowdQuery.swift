package import Foundation

/// Tests of one (provider, replay) over a time range, for the crowd-sourced analysis. Only tests that have both
/// an original (testID 0) and a control (testID 1) replay are returned, ordered by start time.
package struct CrowdQuery: Sendable, Hashable {
    /// Provider name (exact match).
    package var provider: String
    /// Original replay name (exact match).
    package var replayName: String
    /// Tests started at or after this instant (`nil`: from the beginning).
    package var from: Date?
    /// Tests started before this instant (`nil`: to the end).
    package var to: Date?
    /// Whether to load the sample arrays (otherwise only the means are filled in).
    package var includeSamples: Bool

    /// Creates a query.
    package init(provider: String, replayName: String, from: Date? = nil, to: Date? = nil, includeSamples: Bool = true) {
        self.provider = provider
        self.replayName = replayName
        self.from = from
        self.to = to
        self.includeSamples = includeSamples
    }
}

/// All tests (or those of a time range), ordered by start time, for export.
package struct TestFilter: Sendable, Hashable {
    /// Tests started at or after this instant.
    package var from: Date?
    /// Tests started before this instant.
    package var to: Date?
    /// Only this provider.
    package var provider: String?
    /// Only this original replay.
    package var replayName: String?

    /// Creates a filter; the default selects every test.
    package init(from: Date? = nil, to: Date? = nil, provider: String? = nil, replayName: String? = nil) {
        self.from = from
        self.to = to
        self.provider = provider
        self.replayName = replayName
    }
}

/// Which session-log entries to read.
package struct SessionEventQuery: Sendable, Hashable {
    /// Entries at or after this instant.
    package var from: Date?
    /// Entries before this instant.
    package var to: Date?
    /// Only these kinds (`nil`: all).
    package var kinds: [SessionEvent.Kind]?
    /// At most this many entries, newest first.
    package var limit: Int

    /// Creates a query.
    package init(from: Date? = nil, to: Date? = nil, kinds: [SessionEvent.Kind]? = nil, limit: Int = 100) {
        self.from = from
        self.to = to
        self.kinds = kinds
        self.limit = limit
    }
}

/// How many session-log entries of one kind a time range holds.
package struct SessionEventCount: Sendable, Hashable, Codable {
    /// The kind.
    package var kind: SessionEvent.Kind
    /// The number of entries.
    package var count: Int

    /// Creates a count.
    package init(kind: SessionEvent.Kind, count: Int) {
        self.kind = kind
        self.count = count
    }
}
