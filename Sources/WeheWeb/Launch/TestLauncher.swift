package import WeheCore
package import WeheStore

/// Starts Wehe tests for the "new test" page. WeheWeb only drives it; the client's `wehe dashboard` command
/// provides the implementation (WeheWeb cannot import WeheClient, which sits on the same layer).
///
/// The dashboard calls `runTest` from a child task of `DashboardRunner.run()` and awaits it, so the test runs in
/// structured concurrency and is cancelled when the dashboard shuts down. At most one test runs at a time.
package protocol TestLauncher: Sendable {
    /// The tests that can be started, in the order the page should offer them.
    func availableTests() async throws -> [LaunchableTest]

    /// Runs the test with the given catalog id to its end, reporting progress through `progress`, and returns the
    /// key under which the result was stored in the dashboard's store (so the page can link to it).
    ///
    /// Throwing ends the run as failed; the error's description is shown to the person (escaped).
    /// Cancellation must be honoured.
    func runTest(id: String, progress: @escaping @Sendable (TestProgressEvent) -> Void) async throws -> TestKey
}

/// A test the "new test" page offers.
package struct LaunchableTest: Sendable, Hashable, Codable {
    /// The catalog id used to start it (`youtube`, `port853s`).
    package var id: String
    /// Display name (`YouTube`).
    package var name: String
    /// Category shown as a group heading (`video`, `music`, `conferencing`, `port`…).
    package var category: String
    /// Nominal duration of one replay, seconds, when known.
    package var durationSeconds: Double?

    /// Creates an entry.
    package init(id: String, name: String, category: String, durationSeconds: Double? = nil) {
        self.id = id
        self.name = name
        self.category = category
        self.durationSeconds = durationSeconds
    }
}

/// Which step a running test is in.
package enum TestPhase: String, Sendable, Hashable, Codable, CaseIterable {
    /// Contacting the server, asking for permission.
    case connecting
    /// Replaying the recorded app traffic (testID 0).
    case original
    /// Replaying the control traffic (testID 1).
    case control
    /// Waiting for the analysis.
    case analysing
    /// Storing the result.
    case saving
}

/// Progress of a running test, reported by a `TestLauncher`.
package enum TestProgressEvent: Sendable, Hashable {
    /// The test entered a phase.
    case phase(TestPhase)
    /// Overall completion in [0, 1].
    case fraction(Double)
    /// A throughput sample of the replay being run: seconds since that replay started and Mbit/s.
    case sample(ReplayRole, seconds: Double, mbps: Double)
    /// A line of free text for the progress log.
    case message(String)
}
