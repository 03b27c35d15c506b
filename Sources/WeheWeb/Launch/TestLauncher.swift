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

    /// What the person must accept before the first test, or `nil` when consent was given already (or is not
    /// asked here). The "new test" page shows it with a checkbox instead of failing the run.
    func consentRequest() async throws -> ConsentRequest?

    /// Records that the person accepted the consent text (the page's checkbox was ticked).
    func acceptConsent() async throws
}

extension TestLauncher {
    /// No consent asked.
    package func consentRequest() async throws -> ConsentRequest? { nil }

    /// Nothing to record.
    package func acceptConsent() async throws {}
}

/// The consent text the "new test" page shows before the first test.
package struct ConsentRequest: Sendable, Hashable {
    /// Heading (`Before you run a test`).
    package var title: String
    /// The text, paragraphs separated by blank lines.
    package var text: String

    /// Creates a request.
    package init(title: String, text: String) {
        self.title = title
        self.text = text
    }
}

/// A test the "new test" page offers.
package struct LaunchableTest: Sendable, Hashable, Codable {
    /// The catalog id used to start it (`youtube`, `port853s`).
    package var id: String
    /// Display name (`YouTube`).
    package var name: String
    /// Category shown as a group heading (`video`, `music`, `conferencing`, `port`…).
    package var category: String
    /// About how long the whole test takes (both replays), seconds, when known.
    package var durationSeconds: Double?
    /// About how much data the whole test moves (both replays, both directions), MB, when known.
    package var sizeMB: Double?
    /// Made by the user with `wehe record`: the grid shows such tests under "My recordings".
    package var recorded: Bool = false

    /// Creates an entry.
    package init(id: String, name: String, category: String, durationSeconds: Double? = nil, sizeMB: Double? = nil) {
        self.id = id
        self.name = name
        self.category = category
        self.durationSeconds = durationSeconds
        self.sizeMB = sizeMB
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
