import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// A launcher that asks for consent until it is given, and stores one result per test: Netflix throttled,
/// Spotify without differentiation.
actor ConsentingLauncher: TestLauncher {
    let store: InMemoryResultStore
    private(set) var consentGiven = false
    private(set) var started: [String] = []

    init(store: InMemoryResultStore) {
        self.store = store
    }

    nonisolated func availableTests() async throws -> [LaunchableTest] {
        [
            LaunchableTest(id: "netflix", name: "Netflix", category: "video", durationSeconds: 16, sizeMB: 10),
            LaunchableTest(id: "spotify", name: "Spotify", category: "music", durationSeconds: 120),
            LaunchableTest(id: "other", name: "Other", category: "music"),
        ]
    }

    func consentRequest() async throws -> ConsentRequest? {
        consentGiven ? nil : ConsentRequest(title: "Before you run a test", text: "First <paragraph>.\n\nSecond one.")
    }

    func acceptConsent() async throws { consentGiven = true }

    func runTest(id: String, progress: @escaping @Sendable (TestProgressEvent) -> Void) async throws -> TestKey {
        started.append(id)
        progress(.phase(.original))
        progress(.fraction(1))
        let throttled = id == "netflix"
        let record = customTest(
            count: throttled ? 80 : 81, provider: "Orange (cellular)",
            replay: throttled ? "Netflix-06072024" : "Spotify-06102024", original: [1.5, 1.4], control: [9, 8.5],
            summary: throttled
                ? makeSummary(verdict: .differentiation, original: 1.45, control: 8.75)
                : makeSummary(verdict: .noDifferentiation, original: 8.6, control: 8.75, p: 0.7))
        try await store.save(test: record)
        return record.key
    }
}

@Suite("choosing tests in the browser")
struct RunChoiceTests {
    func post(_ client: any TestClientProtocol, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/run", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: body))
    }

    @Test("several apps, each with its time and data; consent asked on the page; the finished run shows each verdict")
    func severalAppsWithConsent() async throws {
        let store = InMemoryResultStore()
        let launcher = ConsentingLauncher(store: store)
        let harness = try Harness(store: store, launcher: launcher)
        try await harness.test { client in
            let page = try await client.execute(uri: "/run", method: .get).text
            #expect(page.contains("<input type=\"checkbox\" name=\"test\" value=\"netflix\" checked>"))
            #expect(page.contains("<input type=\"checkbox\" name=\"test\" value=\"spotify\">"))
            #expect(page.contains("<span class=\"cost\">about 16 s · about 10 MB</span>"))
            #expect(page.contains("<span class=\"cost\">about 2 min</span>"))
            #expect(page.contains("Other</span></label>"))
            #expect(page.contains("<legend>Before you run a test</legend>"))
            #expect(page.contains("<p>First &lt;paragraph&gt;.</p>") && page.contains("<p>Second one.</p>"))
            #expect(page.contains("<input type=\"checkbox\" name=\"consent\" value=\"yes\" required>"))

            // Without the box ticked nothing runs, and the page says what to do (not a command-line option).
            let refused = try await post(client, "test=netflix&test=spotify")
            #expect(refused.status == .badRequest)
            #expect(refused.text.contains("Tick the consent box to run a test."))
            #expect(await launcher.started.isEmpty)
            #expect(await !launcher.consentGiven)

            let started = try await post(client, "test=netflix&test=spotify&test=netflix&consent=yes")
            #expect(started.status == .seeOther)
            #expect(await launcher.consentGiven)
            _ = try await waitForEnd(client, run: "run-1")
            #expect(await launcher.started == ["netflix", "spotify"])
            let finished = try await client.execute(uri: "/run/run-1", method: .get).text
            #expect(finished.contains("<h1>Testing Netflix, Spotify</h1>"))
            #expect(finished.contains("Netflix looks throttled on Orange (cellular)</a>"))
            #expect(finished.contains("No differentiation found for Spotify on Orange (cellular)</a>"))
            #expect(finished.contains("href=\"/tests/demo-user/80?lang=en\""))
            #expect(finished.contains("href=\"/tests/demo-user/81?lang=en\""))
            #expect(finished.contains("class=\"explanation\">Netflix looks throttled: its traffic averaged"))

            // Consent is asked once.
            let again = try await client.execute(uri: "/run", method: .get).text
            #expect(!again.contains("name=\"consent\""))
            #expect(try await post(client, "test=spotify").status == .seeOther)
        }
    }
}
