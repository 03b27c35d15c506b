import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// `wehe results` and `wehe demo` as people read them: "not measured" instead of 0, the DPI finding in
/// `results show`, the progress in plain words (built binary).
@Suite("readable results on the command line (built binary)")
struct ReadableResultsCLITests {
    static func settings(_ data: String) {
        let settings = """
            {"server":"127.0.0.1","userID":"\(DashboardCommandTests.userID)","lastHistoryCount":2,\
            "ruleSet":"android","confirmation":true,"consentAccepted":true}
            """
        #expect(TestResources.write(settings, to: data + "/settings.json"))
    }

    /// A test whose original replay has no sample: the analysis gave 0 for it.
    static func unmeasured(count: Int) -> TestRecord {
        let key = TestKey(userID: DashboardCommandTests.userID, historyCount: count)
        let start = DashboardCommandTests.start
        let control = ThroughputSeries(mbps: [9, 9.2, 8.8], interval: 0.5)
        let summary = AnalysisSummary(
            areaTest: 1, ks2RatioTest: 0, originalMeanMbps: 0, controlMeanMbps: 9, ksStatistic: 0, ksPValue: 1,
            verdict: .inconclusive, direction: nil,
            thresholds: AppliedThresholds(area: 0.5, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android"),
            note: "too few measurements: the original replay has no samples (at least 5 each are needed)")
        return TestRecord(
            key: key,
            metadata: TestMetadata(
                replayName: "Youtube-02202024", startedAt: start, provider: "Net", serverName: "replay.example"),
            replays: [
                ReplayRecord(
                    key: key.replay(1), replayName: "YoutubeRandom-02202024", samples: control, receivedAt: start)
            ],
            analyses: [AnalysisRecord(test: key, comparedTestID: 1, summary: summary, analysedAt: start)])
    }

    @Test("a replay without samples is 'not measured' in results list, show and the summary, never 0.0 Mbit/s")
    func notMeasured() async throws {
        let data = TestResources.temporaryDirectory("wehe-not-measured")
        Self.settings(data)
        try await DashboardCommandTests.seed(data + "/history.sqlite", [Self.unmeasured(count: 2)])
        let replays = TestResources.fixtureReplays
        let list = try await CommandRunner.run("wehe", ["results", "--data-dir", data, "--replays", replays])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("not measured"), "\(list.stdout)")
        let show = try await CommandRunner.run(
            "wehe", ["results", "show", "2", "--data-dir", data, "--replays", replays])
        #expect(show.stdout.contains("original mean: not measured"), "\(show.stdout)")
        #expect(!show.stdout.contains("0.000 Mbit/s"))
        let summary = try await CommandRunner.run(
            "wehe", ["results", "show", "2", "--summary", "--data-dir", data, "--replays", replays])
        #expect(summary.stdout.contains("was not measured"), "\(summary.stdout)")
        #expect(!summary.stdout.contains("0.0 Mbit/s"))
        let french = try await CommandRunner.run(
            "wehe", ["results", "show", "2", "--lang", "fr", "--data-dir", data, "--replays", replays])
        #expect(french.stdout.contains("non mesuré"), "\(french.stdout)")
    }

    @Test("results show prints the DPI finding of the test: the matched bytes as text and hex, and its cost")
    func dpiFinding() async throws {
        let data = TestResources.temporaryDirectory("wehe-show-dpi")
        Self.settings(data)
        let path = data + "/history.sqlite"
        try await DashboardCommandTests.seed(path, [DashboardCommandTests.record(count: 1)])
        let store = try await SQLResultStore.open(
            configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))),
            logger: .init(label: "wehe.tests"))
        let payload = Array("GET / HTTP/1.1\r\nHost: video.example\r\n".utf8)
        let start = DashboardCommandTests.start
        try await store.finish(
            dpiSearch: DPIResultRecord(
                id: DPISearchID(
                    userID: DashboardCommandTests.userID, carrierName: "Net", replayName: "Youtube-02202024"),
                historyCount: 1, startedAt: start, finishedAt: start.addingTimeInterval(60), probes: 12,
                bytesUsed: 3_400_000, outcome: "rule", message: "rule",
                rules: [
                    DPIFoundRule(
                        packet: "C_1", left: 22, right: 35, content: Array(payload[22..<35]),
                        matchingBytes: Array(22..<35), packetPayload: payload)
                ]))
        await store.close()
        let show = try await CommandRunner.run(
            "wehe", ["results", "show", "1", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(show.status == 0, "\(show.stderr)")
        // Lines are wrapped at 80 columns: compare with runs of white space made one space.
        let text = show.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("DPI search of"), "\(show.stdout)")
        #expect(text.contains("12 probes, 3.4 MB"))
        #expect(text.contains("packet C_1, bytes 22 to 34: \"video.example\""))
        #expect(text.contains("(hex 76 69 64 65 6f 2e 65 78 61 6d 70 6c 65)"))
        #expect(show.stdout.contains("\n  DPI search of"), "indented under the test")
        let french = try await CommandRunner.run(
            "wehe",
            ["results", "show", "1", "--lang", "fr", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        let frenchText = french.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(frenchText.contains("recherche DPI du"), "\(french.stdout)")
        #expect(frenchText.contains("paquet C_1, octets 22 à 34"))
    }

    @Test("wehe dashboard's settings page writes only the edited key into settings.json, checked as wehe settings set")
    func dashboardSettings() async throws {
        let data = TestResources.temporaryDirectory("wehe-dashboard-settings")
        Self.settings(data)
        let server = try RunningProcess(
            "wehe", ["dashboard", "--port", "0", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        defer { server.stop() }
        let base = try await server.address(prefix: "wehe dashboard: ")
        let page = try await HTTP.get(base + "settings")
        #expect(page.status == 200)
        #expect(page.body.contains("name=\"value.p-threshold\" value=\"default\""), "\(page.body)")
        #expect(page.body.contains("name=\"value.server\" value=\"127.0.0.1\""))
        let token = try #require(
            page.body.split(separator: "name=\"token\" value=\"").dropFirst().first?.split(separator: "\"").first)
        // Another command changes the provider while the page is open; the form edits only the p-value threshold.
        let set = try await CommandRunner.run("wehe", ["settings", "set", "provider", "Elsewhere", "--data-dir", data])
        #expect(set.status == 0, "\(set.stderr)")
        let saved = try await HTTP.post(
            base + "settings",
            form: "lang=en&token=\(token)&value.p-threshold=0.05&shown.p-threshold=default"
                + "&value.provider=none&shown.provider=none&value.server=127.0.0.1&shown.server=127.0.0.1")
        #expect(saved.status == 200 && saved.body.contains("Saved: p-threshold."), "\(saved.body)")
        let file = try String(contentsOfFile: data + "/settings.json", encoding: .utf8)
        #expect(file.contains("\"ksPValueThreshold\""), "\(file)")
        #expect(file.contains("Elsewhere"), "the provider set meanwhile is kept: \(file)")
        // A value `wehe settings set` refuses is refused here too, with its message; nothing is written.
        let refused = try await HTTP.post(
            base + "settings", form: "lang=en&token=\(token)&value.rules=windows&shown.rules=android")
        #expect(refused.status == 400)
        #expect(refused.body.contains("rules must be android or ios"), "\(refused.body)")
        let show = try await CommandRunner.run("wehe", ["settings", "show", "--data-dir", data])
        #expect(show.stdout.contains("0.05") && show.stdout.contains("android"), "\(show.stdout)")
        // Without the form's token: refused.
        let forged = try await HTTP.post(base + "settings", form: "value.rules=ios&shown.rules=android")
        #expect(forged.status == 403)
    }
}
