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
    /// The tests to run, one after the other (at least one).
    package var tests: [LaunchableTest]
    /// The first test (the run's name when it holds one test).
    package var test: LaunchableTest { tests[0] }
    /// Which of `tests` is running (index).
    package var current: Int
    /// The keys of the tests finished so far, in order.
    package var results: [TestKey]
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

    /// Creates a queued run of one test.
    package init(id: String, test: LaunchableTest, requestedAt: Date) {
        self.init(id: id, tests: [test], requestedAt: requestedAt)
    }

    /// Creates a queued run of several tests (an empty list is not a run: give at least one).
    package init(id: String, tests: [LaunchableTest], requestedAt: Date) {
        precondition(!tests.isEmpty, "a run holds at least one test")
        self.id = id
        self.tests = tests
        self.current = 0
        self.results = []
        self.requestedAt = requestedAt
        self.state = .queued
        self.phase = nil
        self.fraction = 0
        self.messages = []
        self.samples = [:]
    }

    package static func == (lhs: TestRun, rhs: TestRun) -> Bool {
        lhs.id == rhs.id && lhs.state == rhs.state && lhs.phase == rhs.phase && lhs.fraction == rhs.fraction
            && lhs.messages == rhs.messages && lhs.results == rhs.results && lhs.current == rhs.current
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}
