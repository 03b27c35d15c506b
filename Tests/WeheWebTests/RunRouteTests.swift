import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// A launcher that reports a fixed script of events and stores a test, optionally waiting for a gate first.
actor ScriptedLauncher: TestLauncher {
    let store: InMemoryResultStore
    let failure: String?
    private var gate: CheckedContinuation<Void, Never>?
    private var gateOpen: Bool
    private(set) var started: [String] = []

    init(store: InMemoryResultStore, failure: String? = nil, gated: Bool = false) {
        self.store = store
        self.failure = failure
        self.gateOpen = !gated
    }

    nonisolated func availableTests() async throws -> [LaunchableTest] {
        [
            LaunchableTest(id: "netflix", name: "Netflix", category: "video"),
            LaunchableTest(id: "spotify", name: "Spotify", category: "music"),
        ]
    }

    func open() {
        gateOpen = true
        gate?.resume()
        gate = nil
    }

    func runTest(id: String, progress: @escaping @Sendable (TestProgressEvent) -> Void) async throws -> TestKey {
        started.append(id)
        progress(.phase(.connecting))
        progress(.message("hello <b>server</b>"))
        if !gateOpen { await withCheckedContinuation { gate = $0 } }
        progress(.phase(.original))
        progress(.sample(.original, seconds: 0.2, mbps: 1.5))
        progress(.fraction(0.5))
        progress(.phase(.control))
        progress(.sample(.control, seconds: 0.2, mbps: 9))
        if let failure { throw ScriptError(text: failure) }
        let record = customTest(
            count: 77, provider: "Orange (cellular)", replay: "Netflix-06072024", original: [1.5, 1.4],
            control: [9, 8.5], summary: makeSummary(verdict: .differentiation, original: 1.45, control: 8.75))
        try await store.save(test: record)
        progress(.phase(.saving))
        return record.key
    }
}

struct ScriptError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// Polls the run JSON until the run has ended (the runner service works concurrently with the client).
func waitForEnd(_ client: any TestClientProtocol, run: String) async throws -> String {
    for _ in 0..<2_000 {
        let text = try await client.execute(uri: "/api/runs/\(run)", method: .get).text
        if text.contains("\"state\" : \"finished\"") || text.contains("\"state\" : \"failed\"") { return text }
        await Task.yield()
    }
    Issue.record("run \(run) did not end")
    return ""
}

@Suite("new test pages")
struct RunRouteTests {
    static let form = ["content-type": "application/x-www-form-urlencoded"]

    func post(_ client: any TestClientProtocol, _ body: String, headers: HTTPFields = [:]) async throws -> TestResponse
    {
        var all: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        all.append(contentsOf: headers)
        return try await client.execute(uri: "/run", method: .post, headers: all, body: ByteBuffer(string: body))
    }

    @Test("without a launcher the page explains that tests start from the command line, and POST is 503")
    func noLauncher() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let page = try await client.execute(uri: "/run", method: .get)
            #expect(page.status == .ok)
            #expect(page.text.contains("Starting tests from the browser is not available here."))
            #expect(!page.text.contains("<form method=\"post\""))
            let started = try await post(client, "test=netflix")
            #expect(started.status == .serviceUnavailable)
        }
    }

    @Test("the page offers the launcher's tests by category; a POST starts one and redirects to its page")
    func startAndFollow() async throws {
        let store = InMemoryResultStore()
        let launcher = ScriptedLauncher(store: store)
        let harness = try Harness(store: store, launcher: launcher)
        try await harness.test { client in
            let page = try await client.execute(uri: "/run?lang=fr", method: .get).text
            #expect(page.contains("<form method=\"post\" action=\"/run\""))
            #expect(page.contains("value=\"netflix\" checked"))
            #expect(page.contains("<h2 class=\"group-title\">music</h2>"))
            #expect(page.contains("Lancer le test"))
            let response = try await post(client, "lang=fr&test=netflix")
            #expect(response.status == .seeOther)
            let location = try #require(response.headers[.location])
            #expect(location == "/run/run-1?lang=fr")
            let final = try await waitForEnd(client, run: "run-1")
            #expect(final.contains("\"href\" : \"/tests/demo-user/77?lang=en\""))
            #expect(await launcher.started == ["netflix"])
            let progress = try await client.execute(uri: location, method: .get).text
            #expect(progress.contains("Test de Netflix"))
            #expect(progress.contains("Terminé."))
            #expect(progress.contains("href=\"/tests/demo-user/77?lang=fr\""))
            #expect(progress.contains("<li>hello &lt;b&gt;server&lt;/b&gt;</li>"))
            #expect(!progress.contains("http-equiv=\"refresh\""))
            #expect(progress.contains("class=\"series series-original\""))
            let events = try await client.execute(uri: "/run/run-1/events", method: .get)
            #expect(events.headers[.contentType] == "text/event-stream; charset=utf-8")
            #expect(
                events.text.contains(
                    "event: state\ndata: {\"href\":\"/tests/demo-user/77?lang=en\",\"label\":\"Finished.\",\"state\":\"finished\""
                ))
            #expect(
                events.text.contains(
                    "event: sample\ndata: {\"mbps\":1.5,\"role\":\"original\",\"seconds\":0.2,\"type\":\"sample\"}"))
            #expect(events.text.contains("\"text\":\"hello <b>server</b>\""))
            let chart = try await client.execute(uri: "/run/run-1/chart", method: .get)
            #expect(chart.text.hasPrefix("<svg"))
            let stored = try await store.test(TestKey(userID: DemoHistory.personUserID, historyCount: 77))
            #expect(stored != nil)
        }
    }

    @Test("a running test's page reloads itself without scripts, and a second test is refused while it runs")
    func oneAtATime() async throws {
        let store = InMemoryResultStore()
        let launcher = ScriptedLauncher(store: store, gated: true)
        let harness = try Harness(store: store, launcher: launcher)
        try await harness.test { client in
            #expect(try await post(client, "test=netflix").status == .seeOther)
            let busy = try await post(client, "test=spotify")
            #expect(busy.status == .tooManyRequests)
            #expect(busy.text.contains("already running"))
            var running = ""
            for _ in 0..<2_000 {
                running = try await client.execute(uri: "/run/run-1", method: .get).text
                if running.contains("Running…") { break }
                await Task.yield()
            }
            #expect(running.contains("<noscript><meta http-equiv=\"refresh\" content=\"3\"></noscript>"))
            #expect(running.contains("<script src=\"/static/run.js\" defer></script>"))
            await launcher.open()
            _ = try await waitForEnd(client, run: "run-1")
            #expect(try await post(client, "test=spotify").status == .seeOther)
        }
    }

    @Test("a failing launcher ends the run as failed with its message")
    func failure() async throws {
        let store = InMemoryResultStore()
        let harness = try Harness(
            store: store, launcher: ScriptedLauncher(store: store, failure: "server refused <us>"))
        try await harness.test { client in
            _ = try await post(client, "test=spotify")
            let final = try await waitForEnd(client, run: "run-1")
            #expect(final.contains("The test failed: server refused <us>"))
            let page = try await client.execute(uri: "/run/run-1", method: .get).text
            #expect(page.contains("The test failed: server refused &lt;us&gt;"))
        }
    }

    @Test("bad posts: unknown test, missing field, foreign origin; unknown run ids are 404")
    func badRequests() async throws {
        let store = InMemoryResultStore()
        let harness = try Harness(store: store, launcher: ScriptedLauncher(store: store))
        try await harness.test { client in
            let unknown = try await post(client, "test=%3Cscript%3E")
            #expect(unknown.status == .badRequest)
            #expect(unknown.text.contains("there is no test called &#39;&lt;script&gt;&#39;"))
            #expect(try await post(client, "other=1").status == .badRequest)
            let foreign = try await post(client, "test=netflix", headers: [.origin: "https://evil.example"])
            #expect(foreign.status == .forbidden)
            let same = try await post(client, "test=netflix", headers: [.origin: "http://localhost"])
            #expect(same.status == .seeOther)
            #expect(try await client.execute(uri: "/run/run-99", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/run/run-99/events", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/api/runs/run-99", method: .get).status == .notFound)
        }
    }
}
