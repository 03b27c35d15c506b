import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// `wehe dashboard` and `wehe-server serve --dashboard-port`, run as the built binaries and read over HTTP.
@Suite("dashboards served by the executables")
struct DashboardCommandTests {
    static let userID = "@dashtest1"
    static let start = Date(timeIntervalSince1970: 1_763_000_000)

    /// One stored test with both replays and an analysis.
    static func record(user: String = userID, count: Int = 1, provider: String = "Test <Provider> & Co") -> TestRecord {
        let key = TestKey(userID: user, historyCount: count)
        let original = ThroughputSeries(mbps: (0..<20).map { 1.5 + Double($0 % 3) * 0.1 }, interval: 0.5)
        let control = ThroughputSeries(mbps: (0..<20).map { 9 + Double($0 % 4) * 0.2 }, interval: 0.5)
        let summary = AnalysisSummary(
            areaTest: 0.82, ks2RatioTest: 1, originalMeanMbps: original.meanMbps ?? 0,
            controlMeanMbps: control.meanMbps ?? 0, ksStatistic: 1, ksPValue: 1e-9, verdict: .differentiation,
            direction: .throttled,
            thresholds: AppliedThresholds(area: 0.5, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android"), note: nil)
        return TestRecord(
            key: key,
            metadata: TestMetadata(
                replayName: "Youtube-02202024", startedAt: start, provider: provider, networkType: "WIFI",
                clientVersion: "test", serverName: "replay.example"),
            replays: [
                ReplayRecord(
                    key: key.replay(0), replayName: "Youtube-02202024", samples: original, receivedAt: start),
                ReplayRecord(
                    key: key.replay(1), replayName: "YoutubeRandom-02202024", samples: control, receivedAt: start),
            ],
            analyses: [AnalysisRecord(test: key, comparedTestID: 1, summary: summary, analysedAt: start)])
    }

    /// Writes `records` (and `localizations`) into the SQLite database at `path`.
    static func seed(_ path: String, _ records: [TestRecord], localizations: [LocalizationRun] = []) async throws {
        let store = try await SQLResultStore.open(
            configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))),
            logger: .init(label: "wehe.tests"))
        try await store.save(tests: records)
        for run in localizations { try await store.save(localization: run) }
        await store.close()
    }

    @Test("wehe dashboard --port 0 prints its address and serves the stored history and a test page")
    func personDashboard() async throws {
        let data = TestResources.temporaryDirectory("wehe-dashboard")
        let settings = """
            {"server":"127.0.0.1","userID":"\(Self.userID)","lastHistoryCount":1,"ruleSet":"android",\
            "confirmation":true,"consentAccepted":false}
            """
        #expect(TestResources.write(settings, to: data + "/settings.json"))
        try await Self.seed(data + "/history.sqlite", [Self.record()])

        let server = try RunningProcess(
            "wehe", ["dashboard", "--port", "0", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        defer { server.stop() }
        let base = try await server.address(prefix: "wehe dashboard: ")
        #expect(base.hasPrefix("http://127.0.0.1:"))

        let history = try await HTTP.get(base)
        #expect(history.status == 200)
        #expect(history.body.contains("<table class=\"history\">"))
        #expect(history.body.contains("/tests/%40dashtest1/1") || history.body.contains("/tests/@dashtest1/1"))
        // Values from the store are escaped.
        #expect(history.body.contains("Test &lt;Provider&gt; &amp; Co"))
        #expect(!history.body.contains("Test <Provider>"))

        let test = try await HTTP.get(base + "tests/%40dashtest1/1")
        #expect(test.status == 200)
        #expect(test.body.contains("<svg"))
        #expect(test.body.contains("<path"))

        let unknown = try await HTTP.get(base + "tests/%40dashtest1/99")
        #expect(unknown.status == 404)
        let malformed = try await HTTP.get(base + "tests/%40dashtest1/abc")
        #expect(malformed.status == 400)
        for response in [unknown, malformed] {
            #expect(response.body.contains("<html"))
            #expect(!response.body.contains("Fatal error") && !response.body.contains("Stack"))
        }
        // The new-test page lists the fixture catalog's tests.
        let run = try await HTTP.get(base + "run")
        #expect(run.status == 200)
        #expect(run.body.contains("value=\"tinyweb\""))
    }

    @Test("wehe-server serve --dashboard-port 0 serves /operator over its store with health and WeHeY runs")
    func operatorDashboard() async throws {
        let data = TestResources.temporaryDirectory("wehe-server-dashboard")
        let now = Date()
        var records: [TestRecord] = []
        for index in 0..<3 {
            var record = Self.record(user: "@op\(index)", count: 1, provider: "Operator <Net>")
            record.metadata.startedAt = now.addingTimeInterval(-Double(index) * 3_600)
            // One test of an app of the fixture catalog: the operator pages name it as the catalog does.
            if index == 2 { record.metadata.replayName = "TinyWeb-11212026" }
            records.append(record)
        }
        let localization = LocalizationRun(
            userID: "@op0", historyCounts: [2, 3], servers: ["s1.example", "s2.example"],
            replayName: "Netflix-06072024", requestedAt: now.addingTimeInterval(-600))
        try await Self.seed(data + "/results.sqlite", records, localizations: [localization])

        let server = try RunningProcess(
            "wehe-server",
            [
                "serve", "--replays", TestResources.fixtureReplays, "--data", data, "--bind", "127.0.0.1",
                "--ephemeral-replay-ports", "--side-channel-port", "0", "--side-channel-plain-port", "off",
                "--analyzer-port", "off", "--analyzer-plain-port", "off", "--dashboard-port", "0",
                "--log-level", "warning",
            ])
        defer { server.stop() }
        let base = try await server.address(prefix: "wehe-server: operator dashboard ")
        #expect(base.hasSuffix("/operator/"))

        let page = try await HTTP.get(base)
        #expect(page.status == 200)
        #expect(page.body.contains("id=\"matrix-table\""))
        #expect(page.body.contains("Operator &lt;Net&gt;"))
        #expect(page.body.contains("Replay server"))
        #expect(page.body.contains("serving"))
        #expect(page.body.contains("s1.example"))
        #expect(page.body.contains("Tiny Web"), "the catalog's app name")

        let json = try await HTTP.get(base + "data.json")
        #expect(json.status == 200)
        #expect(json.body.contains("\"totalTests\":3") || json.body.contains("\"totalTests\" : 3"))
        #expect(json.body.contains("Netflix-06072024"))

        let badDate = try await HTTP.get(base + "?from=2024-13-45")
        #expect(badDate.status == 400)
        #expect(badDate.body.contains("<html"))
        let badTable = try await HTTP.get(base + "data.csv?table=%3Cscript%3E")
        #expect(badTable.status == 400)
        #expect(!badTable.body.contains("<script>"))
    }
}

extension DashboardCommandTests {
    @Test("a test started on wehe dashboard's page runs against wehe-server and reaches both dashboards")
    func liveRun() async throws {
        let serverData = TestResources.temporaryDirectory("wehe-live-server")
        let clientData = TestResources.temporaryDirectory("wehe-live-client")
        let settings = """
            {"server":"127.0.0.1","userID":"@livetest1","lastHistoryCount":0,"ruleSet":"android",\
            "confirmation":false,"consentAccepted":true}
            """
        #expect(TestResources.write(settings, to: clientData + "/settings.json"))
        let server = try RunningProcess(
            "wehe-server",
            [
                "serve", "--replays", TestResources.fixtureReplays, "--data", serverData, "--bind", "127.0.0.1",
                "--ephemeral-replay-ports", "--side-channel-port", "0", "--side-channel-plain-port", "off",
                "--analyzer-port", "0", "--analyzer-plain-port", "off", "--dashboard-port", "0",
                "--server-name", "live.test", "--log-level", "warning",
            ])
        defer { server.stop() }
        let operatorBase = try await server.address(prefix: "wehe-server: operator dashboard ")
        let listening = try await server.address(prefix: "wehe-server: listening ")
        var ports: [String: String] = [:]
        for field in listening.split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2 { ports[String(parts[0])] = String(parts[1]) }
        }
        let sideChannel = try #require(ports["side-channel-tls"])
        let analyzer = try #require(ports["analyzer-tls"])

        let client = try RunningProcess(
            "wehe",
            [
                "dashboard", "--port", "0", "--data-dir", clientData, "--replays", TestResources.fixtureReplays,
                "--server", "127.0.0.1", "--cert", serverData + "/certs/ca.crt", "--side-channel-port", sideChannel,
                "--analyzer-port", analyzer,
            ])
        defer { client.stop() }
        let base = try await client.address(prefix: "wehe dashboard: ")

        let started = try await HTTP.post(base + "run", form: "test=tinyweb&lang=en")
        #expect(started.status == 200)
        let runID = try #require(started.url.split(separator: "/").last.map(String.init))
        var state = ""
        var body = ""
        for _ in 0..<240 where state != "finished" && state != "failed" {
            try await Task.sleep(for: .milliseconds(500))
            body = try await HTTP.get(base + "api/runs/" + runID).body
            let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            state = object?["state"] as? String ?? ""
        }
        #expect(state == "finished", "run ended as \(state): \(body)")

        let history = try await HTTP.get(base)
        #expect(history.body.contains("/tests/%40livetest1/1") || history.body.contains("/tests/@livetest1/1"))
        let page = try await HTTP.get(base + "tests/%40livetest1/1")
        #expect(page.status == 200)
        #expect(page.body.contains("<path"))
        let operatorData = try await HTTP.get(operatorBase + "data.json")
        #expect(operatorData.body.contains("\"totalTests\":1") || operatorData.body.contains("\"totalTests\" : 1"))
    }
}

/// A built executable running in the background; its standard output is collected (and its standard error with it,
/// for `keepingErrors`: where a program writes its log).
final class RunningProcess: Sendable {
    private let process: TestProcess
    private let output: PipeCollector

    init(_ product: String, _ arguments: [String], keepingErrors: Bool = false) throws {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct(product))
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: TestResources.packageRoot)
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardError = keepingErrors ? pipe : FileHandle.nullDevice
        process.standardOutput = pipe
        self.process = process
        try process.run()
        output = PipeCollector(pipe)
    }

    /// The URL printed after `prefix`, waiting up to a minute for it.
    func address(prefix: String) async throws -> String {
        for _ in 0..<600 {
            let text = output.text
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count))
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw RunningProcessError(message: "no address printed; output: \(output.text)")
    }

    /// The first line of output that contains `text`, waiting up to a minute for it.
    func line(containing text: String) async throws -> String {
        for _ in 0..<600 {
            if let line = output.text.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw RunningProcessError(message: "no line with \(text); output: \(output.text)")
    }

    /// `stop()` on a thread of its own: a server's drain takes a couple of seconds, which a test must not spend
    /// holding one of the few cooperative threads the suites share (ARCHITECTURE.md, section 7).
    func stopOffThread() async throws { await onOwnThread { self.stop() } }

    /// Interrupts the process and waits for it to end.
    func stop() {
        if process.isRunning {
            process.interrupt()
            process.waitUntilExit()
        }
    }
}

/// The process did not print what was expected.
struct RunningProcessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Plain HTTP requests (`LoopbackHTTP`, not `URLSession`: see there why).
enum HTTP {
    static func get(_ address: String) async throws -> (status: Int, body: String) {
        let response = try await LoopbackHTTP.get(address)
        return (response.status, response.body)
    }

    /// Posts a form; redirects are followed, `url` is where they ended.
    static func post(_ address: String, form: String) async throws -> (status: Int, url: String, body: String) {
        let response = try await LoopbackHTTP.post(address, form: form)
        return (response.status, response.url, response.body)
    }
}
