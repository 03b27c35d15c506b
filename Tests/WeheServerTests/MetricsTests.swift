import Foundation
import Prometheus
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// The Prometheus metrics: every metric has HELP text, and the request-lateness record covers timed
/// replays only.
@Suite("Server metrics", .timeLimit(.minutes(6)))
struct MetricsTests {
    /// `# HELP` texts and `# TYPE`s of an exposition, by metric name.
    static func families(_ registry: PrometheusCollectorRegistry) -> (help: [String: String], type: [String: String]) {
        var help: [String: String] = [:]
        var type: [String: String] = [:]
        for line in String(decoding: registry.emitToBuffer(), as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard words.count >= 3, words[0] == "#" else { continue }
            if words[1] == "HELP" { help[words[2]] = words.count > 3 ? words[3] : "" }
            if words[1] == "TYPE" { type[words[2]] = words.count > 3 ? words[3] : "" }
        }
        return (help, type)
    }

    /// The value of an exposition line `name value` (no labels).
    static func value(_ name: String, in registry: PrometheusCollectorRegistry) -> Double? {
        for line in String(decoding: registry.emitToBuffer(), as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == name[...] { return Double(words[1]) }
        }
        return nil
    }

    @Test("every metric the server records has HELP text")
    func everyMetricHasHelp() {
        let registry = PrometheusCollectorRegistry()
        let metrics = ServerMetrics(registry: registry)
        metrics.admission("granted")
        metrics.connectionAccepted("side")
        metrics.connectionRejected("side")
        metrics.connectionFailed("tcp-replay", reason: "io")
        metrics.connectionUnused("side")
        metrics.bytesSent(100, transport: "tcp")
        metrics.replayCompleted()
        metrics.verdict("inconclusive")
        metrics.activeSessions(2)
        metrics.requestLateness(seconds: 0.01)
        metrics.responseDelay(seconds: 0.001)
        metrics.fileWriteFailed("pcap", stage: "open")
        let (help, type) = Self.families(registry)
        #expect(Set(type.keys) == Set(ServerMetrics.help.keys), "metrics recorded: \(type.keys.sorted())")
        for name in type.keys.sorted() {
            #expect((help[name] ?? "").count > 20, "\(name) has HELP '\(help[name] ?? "<none>")'")
        }
        #expect(type["wehe_request_arrival_lateness_seconds"] == "histogram")
        // A metric of another library through the same factory gets a HELP line too.
        let factory = PrometheusHelpFactory(registry: registry)
        factory.makeCounter(label: "library_events_total", dimensions: []).increment(by: 1)
        #expect(Self.families(registry).help["library_events_total"]?.contains("library") == true)
    }

    @Test("the lateness histogram and the replay-timing events leave untimed (port) replays out")
    func latenessForTimedReplaysOnly() async throws {
        let library = ReplayLibrary(directory: TestResources.fixtureReplays)
        let port = try library.trace(file: "port_8081.pcap_client_all.json")
        let timed = try library.trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let registry = PrometheusCollectorRegistry()
        let withRegistry: (inout ReplayServerConfiguration) -> Void = { $0.metricsRegistry = registry }
        try await ServerHarness.run(configure: withRegistry) { server in
            var client = ScriptedClient()
            client.userID = "@metrics01"
            let untimed = try await client.run(port, testID: 0, server: server)
            #expect(untimed.okAfterResult == "OK")
            #expect(try await server.waitForSessions(atMost: 0))
            client.historyCount = 2
            let scheduled = try await client.run(timed, testID: 0, server: server)
            #expect(scheduled.okAfterResult == "OK")
            // Both replay connections' handlers have ended (the timing is recorded at their end).
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(20))
            var events = try await server.store.sessionEvents(SessionEventQuery())
            while clock.now < deadline {
                let connections = await server.server.status().connections
                if connections == 0, events.contains(where: { $0.kind.rawValue == "replay-timing" }) { break }
                try await Task.sleep(for: .milliseconds(20))
                events = try await server.store.sessionEvents(SessionEventQuery())
            }
            let timings = events.filter { $0.kind.rawValue == "replay-timing" }
            #expect(timings.count == 1, "\(timings.map(\.detail))")
            #expect(timings.first?.detail.hasPrefix("groups 3;") == true)
            // TinyWeb has 3 request groups; the port replay's groups are not in the histogram.
            #expect(Self.value("wehe_request_arrival_lateness_seconds_count", in: registry) == 3)
            // The server's own delay is schedule-free: recorded for both replays.
            let delays = Self.value("wehe_response_send_delay_seconds_count", in: registry) ?? 0
            #expect(delays > 3)
        }
    }
}
