package import Foundation
package import WeheCore
package import WeheStore

/// The state of one test started from the browser, as the run page shows it.
package struct TestRun: Sendable, Hashable {
    /// How a run stands.
    package enum State: Sendable, Hashable {
        /// Accepted, waiting for `DashboardRunner` to start it.
        case queued
        /// The launcher is running it.
        case running
        /// Finished; the result is stored under this key.
        case finished(TestKey)
        /// Ended with an error (message shown escaped).
        case failed(String)

        /// Whether the run has ended.
        package var isTerminal: Bool {
            switch self {
            case .queued, .running: false
            case .finished, .failed: true
            }
        }

        /// `queued`, `running`, `finished` or `failed`.
        package var name: String {
            switch self {
            case .queued: "queued"
            case .running: "running"
            case .finished: "finished"
            case .failed: "failed"
            }
        }
    }

    /// The run's id (`run-1`, `run-2`…), unique while the dashboard runs.
    package var id: String
    /// The test started.
    package var test: LaunchableTest
    /// When it was requested.
    package var requestedAt: Date
    /// Where it stands.
    package var state: State
    /// The current phase, once one was reported.
    package var phase: TestPhase?
    /// Overall completion in [0, 1].
    package var fraction: Double
    /// Log lines (most recent last, bounded).
    package var messages: [String]
    /// The latest throughput samples per role (bounded), for the live chart.
    package var samples: [ReplayRole: [(seconds: Double, mbps: Double)]]

    /// Creates a queued run.
    package init(id: String, test: LaunchableTest, requestedAt: Date) {
        self.id = id
        self.test = test
        self.requestedAt = requestedAt
        self.state = .queued
        self.phase = nil
        self.fraction = 0
        self.messages = []
        self.samples = [:]
    }

    package static func == (lhs: TestRun, rhs: TestRun) -> Bool {
        lhs.id == rhs.id && lhs.state == rhs.state && lhs.phase == rhs.phase && lhs.fraction == rhs.fraction
            && lhs.messages == rhs.messages
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}
