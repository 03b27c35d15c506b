package import Foundation
package import WeheCore

/// A dimension that `ResultStore.counts(_:)` can group by.
package enum CountDimension: String, Sendable, Hashable, Codable, CaseIterable {
    /// Provider name.
    case provider
    /// Original replay name (the app).
    case replay
    /// Verdict of the normal analysis; tests not analysed yet form their own group (`verdict == nil`).
    case verdict
    /// UTC day the test started.
    case day
    /// Network type.
    case networkType = "network-type"
}

/// Which tests to count and how to group them; the grouping and counting run in the database.
package struct CountQuery: Sendable, Hashable {
    /// Group by these dimensions (empty: one total).
    package var groupBy: [CountDimension]
    /// Only tests started at or after this instant.
    package var from: Date?
    /// Only tests started before this instant.
    package var to: Date?
    /// Only these providers (`nil`: all).
    package var providers: [String]?
    /// Only these original replay names (`nil`: all).
    package var replays: [String]?
    /// Only these verdicts (`nil`: all, including tests not analysed yet).
    package var verdicts: [Verdict]?

    /// Creates a query.
    package init(
        groupBy: [CountDimension],
        from: Date? = nil,
        to: Date? = nil,
        providers: [String]? = nil,
        replays: [String]? = nil,
        verdicts: [Verdict]? = nil
    ) {
        self.groupBy = groupBy
        self.from = from
        self.to = to
        self.providers = providers
        self.replays = replays
        self.verdicts = verdicts
    }
}

/// One group of a count: the values of the grouped dimensions and how many tests fall in it. Dimensions that were
/// not grouped by are `nil`.
package struct CountRow: Sendable, Hashable, Codable {
    /// Provider, when grouped by provider (`nil` also for tests without a provider).
    package var provider: String?
    /// Original replay name, when grouped by replay.
    package var replayName: String?
    /// Verdict, when grouped by verdict (`nil` also for tests not analysed yet).
    package var verdict: Verdict?
    /// UTC day number (days since 1970-01-01), when grouped by day.
    package var day: Int?
    /// Network type, when grouped by network type.
    package var networkType: String?
    /// Number of tests.
    package var count: Int

    /// Creates a row.
    package init(
        provider: String? = nil,
        replayName: String? = nil,
        verdict: Verdict? = nil,
        day: Int? = nil,
        networkType: String? = nil,
        count: Int
    ) {
        self.provider = provider
        self.replayName = replayName
        self.verdict = verdict
        self.day = day
        self.networkType = networkType
        self.count = count
    }

    /// The start of `day` (UTC midnight), when grouped by day.
    package var dayStart: Date? {
        day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }
    }
}
