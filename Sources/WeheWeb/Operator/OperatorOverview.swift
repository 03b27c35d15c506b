package import Foundation
package import WeheCore
import WeheStore

/// Everything the operator page shows, as data: what the JSON download returns and what the page renders.
package struct OperatorOverview: Sendable, Codable, Hashable {
    /// Verdict counts of one app or provider.
    package struct Breakdown: Sendable, Codable, Hashable {
        /// Stored name (replay name or provider).
        package var name: String
        /// Display name.
        package var displayName: String
        /// All tests.
        package var tests: Int
        /// Tests with differentiation.
        package var differentiation: Int
        /// Inconclusive tests.
        package var inconclusive: Int
        /// Tests without differentiation.
        package var noDifferentiation: Int
        /// Blocked port tests.
        package var blocked: Int
        /// Tests not analysed yet.
        package var notAnalysed: Int

        init(name: String, displayName: String) {
            self.name = name
            self.displayName = displayName
            tests = 0
            differentiation = 0
            inconclusive = 0
            noDifferentiation = 0
            blocked = 0
            notAnalysed = 0
        }

        mutating func add(_ verdict: Verdict?, _ count: Int) {
            tests += count
            switch verdict {
            case .differentiation: differentiation += count
            case .inconclusive: inconclusive += count
            case .noDifferentiation: noDifferentiation += count
            case .blocked: blocked += count
            case nil: notAnalysed += count
            }
        }
    }

    /// Tests on one day.
    package struct DayCount: Sendable, Codable, Hashable {
        /// `YYYY-MM-DD` (UTC day, as the store groups).
        package var day: String
        /// Tests.
        package var tests: Int
    }

    /// One cell of the provider × app matrix.
    package struct Cell: Sendable, Codable, Hashable {
        /// Provider.
        package var provider: String
        /// App (replay name).
        package var app: String
        /// Tests.
        package var tests: Int
        /// Tests with differentiation.
        package var differentiation: Int
    }

    /// A WeHeY run.
    package struct Localization: Sendable, Codable, Hashable {
        /// When it was requested.
        package var requestedAt: Date
        /// Replay name.
        package var replay: String
        /// The two servers.
        package var servers: [String]
        /// Verdict (`nil` while computing).
        package var verdict: LocalizationVerdict?
        /// Throughput-sum test p-value.
        package var sumTestPValue: Double?
        /// Average loss per branch.
        package var averageLoss: [Double]
    }

    /// The health panel.
    package struct Health: Sendable, Codable, Hashable {
        /// Worst status of the items.
        package var status: HealthStatus
        /// When the server started, if known.
        package var startedAt: Date?
        /// The figures.
        package var items: [HealthItem]
    }

    /// First day of the selection.
    package var from: String
    /// Last day of the selection (inclusive).
    package var to: String
    /// Selected providers (empty: all).
    package var providers: [String]
    /// Selected apps (empty: all).
    package var apps: [String]
    /// Tests in the selection.
    package var totalTests: Int
    /// Tests with differentiation in the selection.
    package var differentiationTests: Int
    /// Tests per day (UTC days).
    package var perDay: [DayCount]
    /// Verdicts per app, most tests first.
    package var perApp: [Breakdown]
    /// Verdicts per provider, most tests first.
    package var perProvider: [Breakdown]
    /// Matrix cells (only non-empty ones).
    package var matrix: [Cell]
    /// Every provider with tests in the date range (for the filter form).
    package var availableProviders: [String]
    /// Every app with tests in the date range (for the filter form).
    package var availableApps: [String]
    /// WeHeY runs (`nil` when the server does not list them).
    package var localizations: [Localization]?
    /// Server health.
    package var health: Health
}
