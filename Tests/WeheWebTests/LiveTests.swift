import Foundation
import Hummingbird
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
        let session = URLSession(configuration: .ephemeral)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            #expect(port > 0)
            let base = "http://127.0.0.1:\(port)"
            func get(_ path: String) async throws -> (String, HTTPURLResponse) {
                let url = try #require(URL(string: base + path))
                let (data, response) = try await session.data(from: url)
                return (String(decoding: data, as: UTF8.self), try #require(response as? HTTPURLResponse))
            }
            let (history, historyResponse) = try await get("/")
            #expect(historyResponse.statusCode == 200)
            #expect(history.contains("<table class=\"history\">"))
            let key = try #require(records.last?.key)
            let (test, testResponse) = try await get("/tests/demo-user/\(key.historyCount)")
            #expect(testResponse.statusCode == 200)
            #expect(test.contains("id=\"throughput-chart\"") && test.contains("id=\"cdf-chart\""))
            let (_, missing) = try await get("/tests/demo-user/4242")
            #expect(missing.statusCode == 404)
            let (css, cssResponse) = try await get("/static/dashboard.css")
            #expect(cssResponse.value(forHTTPHeaderField: "Content-Type") == "text/css; charset=utf-8")
            #expect(!css.isEmpty)
            let (operatorPage, operatorResponse) = try await get("/operator/")
            #expect(operatorResponse.statusCode == 200)
            #expect(operatorPage.contains("id=\"per-day-chart\""))

            var request = URLRequest(url: try #require(URL(string: base + "/run")))
            request.httpMethod = "POST"
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data("test=netflix".utf8)
            let (_, posted) = try await session.data(for: request)
            // URLSession follows the 303 to the run page.
            #expect((posted as? HTTPURLResponse)?.statusCode == 200)
            #expect(posted.url?.path == "/run/run-1")
            let (events, eventsResponse) = try await get("/run/run-1/events")
            #expect(eventsResponse.value(forHTTPHeaderField: "Content-Type") == "text/event-stream; charset=utf-8")
            #expect(events.contains("event: state"))
            #expect(events.contains("\"state\":\"finished\""))
            group.cancelAll()
        }
        session.invalidateAndCancel()
    }
}
