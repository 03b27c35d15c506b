import Foundation
import Hummingbird
import Testing
import WeheCore
import WeheStore
import WeheTestKit

@testable import WeheWeb

@Suite("live server")
struct LiveTests {
    @Test("the dashboard served on 127.0.0.1 port 0 answers a real HTTP client, including a test run's event stream")
    func liveServer() async throws {
        let store = InMemoryResultStore()
        let records = try await seedPerson(store, count: 5)
        let launcher = ScriptedLauncher(store: store)
        let dashboard = try Dashboard(
            configuration: DashboardConfiguration(
                store: store, userID: DemoHistory.personUserID, launcher: launcher, catalog: DemoHistory.catalog,
                now: { fixedNow }))
        let router = Router()
        dashboard.addPersonRoutes(to: router)
        dashboard.addOperatorRoutes(to: router)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            services: [dashboard.runner],
            onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            #expect(port > 0)
            let base = "http://127.0.0.1:\(port)"
            func get(_ path: String) async throws -> (String, LoopbackHTTP.Response) {
                let response = try await LoopbackHTTP.get(base + path)
                return (response.body, response)
            }
            let (history, historyResponse) = try await get("/")
            #expect(historyResponse.status == 200)
            #expect(history.contains("<table class=\"history\">"))
            let key = try #require(records.last?.key)
            let (test, testResponse) = try await get("/tests/demo-user/\(key.historyCount)")
            #expect(testResponse.status == 200)
            #expect(test.contains("id=\"throughput-chart\"") && test.contains("id=\"cdf-chart\""))
            let (_, missing) = try await get("/tests/demo-user/4242")
            #expect(missing.status == 404)
            let (css, cssResponse) = try await get("/static/dashboard.css")
            #expect(cssResponse.header("Content-Type") == "text/css; charset=utf-8")
            #expect(!css.isEmpty)
            let (operatorPage, operatorResponse) = try await get("/operator/")
            #expect(operatorResponse.status == 200)
            #expect(operatorPage.contains("id=\"per-day-chart\""))

            let posted = try await LoopbackHTTP.post(base + "/run", form: "test=netflix")
            // The 303 is followed to the run page.
            #expect(posted.status == 200)
            #expect(URL(string: posted.url)?.path == "/run/run-1")
            let (events, eventsResponse) = try await get("/run/run-1/events")
            #expect(eventsResponse.header("Content-Type") == "text/event-stream; charset=utf-8")
            #expect(events.contains("event: state"))
            #expect(events.contains("\"state\":\"finished\""))
            group.cancelAll()
        }
    }
}
