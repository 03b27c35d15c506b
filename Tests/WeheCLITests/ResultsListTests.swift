import Foundation
import Testing
import WeheCore
import WeheStore
import WeheTestKit

/// `wehe results` (list) on a seeded history (built binary): the sensitive verdict of interleaved tests
/// in a column of its own, and in `--json`.
@Suite("wehe results list: the sensitive verdict (built binary, seeded history)")
struct ResultsListTests {
    static func settings(_ data: String) -> Bool {
        TestResources.write(
            """
            {"server":"127.0.0.1","userID":"\(DashboardCommandTests.userID)","lastHistoryCount":3,\
            "ruleSet":"android","confirmation":true,"consentAccepted":true}
            """, to: data + "/settings.json")
    }

    static func sensitive(_ verdict: Verdict, _ direction: DifferentiationDirection?, slowdown: Double)
        -> SensitiveSummary
    {
        SensitiveSummary(
            verdict: verdict, direction: direction, rounds: 10, pValue: verdict == .differentiation ? 0.002 : 0.6,
            alpha: 0.008, slowdown: slowdown, slowdownLower: slowdown - 0.04, slowdownUpper: slowdown + 0.04,
            confidenceLevel: 0.95, originalMeansMbps: [], controlMeansMbps: [])
    }

    /// The table's line of test `id`.
    static func line(_ table: String, id: Int) -> String? {
        table.split(separator: "\n").map(String.init).first { $0.hasPrefix("\(id) ") || $0.hasPrefix(" \(id) ") }
    }

    @Test("a SENS column with -18%, none, or - (not measured); its caption; the JSON fields; French")
    func sensitiveColumn() async throws {
        let data = TestResources.temporaryDirectory("wehe-list")
        defer { try? FileManager.default.removeItem(atPath: data) }
        #expect(Self.settings(data))
        var slowed = DashboardCommandTests.record(count: 1)
        slowed.sensitive = Self.sensitive(.differentiation, .throttled, slowdown: 0.184)
        var unslowed = DashboardCommandTests.record(count: 2)
        unslowed.sensitive = Self.sensitive(.noDifferentiation, nil, slowdown: 0.01)
        let plain = DashboardCommandTests.record(count: 3)
        try await DashboardCommandTests.seed(data + "/history.sqlite", [slowed, unslowed, plain])

        let list = try await CommandRunner.run("wehe", ["results", "--data-dir", data])
        #expect(list.status == 0, "\(list.stderr)")
        let header = try #require(list.stdout.split(separator: "\n").first.map(String.init))
        #expect(header.hasSuffix("SENS"), "\(list.stdout)")
        #expect(Self.line(list.stdout, id: 1)?.hasSuffix("-18%") == true, "\(list.stdout)")
        #expect(Self.line(list.stdout, id: 2)?.hasSuffix("none") == true, "\(list.stdout)")
        #expect(Self.line(list.stdout, id: 3)?.hasSuffix(" -") == true, "\(list.stdout)")
        #expect(list.stdout.contains("SENS: sensitive verdict of interleaved tests"))

        let json = try await CommandRunner.run("wehe", ["results", "--data-dir", data, "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let first = try #require(rows.first { $0["id"] as? Int == 1 })
        #expect(first["sensitiveVerdict"] as? String == "differentiation")
        #expect(first["sensitiveDirection"] as? String == "throttled")
        #expect(abs((first["slowdown"] as? Double ?? 0) - 0.184) < 1e-9)
        #expect(first["sensitiveRounds"] as? Int == 10)
        #expect(rows.first { $0["id"] as? Int == 3 }?["sensitiveVerdict"] is NSNull)

        let french = try await CommandRunner.run("wehe", ["results", "--data-dir", data, "--lang", "fr"])
        #expect(Self.line(french.stdout, id: 2)?.hasSuffix("aucune") == true, "\(french.stdout)")
        #expect(french.stdout.contains("SENS : verdict sensible des tests entrelacés"))
    }

    @Test("a history without sensitive verdicts keeps the 80-column table without the SENS column")
    func noSensitiveColumn() async throws {
        let data = TestResources.temporaryDirectory("wehe-list")
        defer { try? FileManager.default.removeItem(atPath: data) }
        #expect(Self.settings(data))
        try await DashboardCommandTests.seed(data + "/history.sqlite", [DashboardCommandTests.record(count: 1)])
        let list = try await CommandRunner.run("wehe", ["results", "--data-dir", data])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(!list.stdout.contains("SENS"))
        #expect(list.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(list.stdout)")
    }

    @Test("results show prints the sensitive note, which says how many replays the time limit stopped")
    func showPrintsTimeLimitNote() async throws {
        let data = TestResources.temporaryDirectory("wehe-list")
        defer { try? FileManager.default.removeItem(atPath: data) }
        #expect(Self.settings(data))
        var record = DashboardCommandTests.record(count: 1)
        var sensitive = Self.sensitive(.differentiation, .throttled, slowdown: 0.88)
        sensitive.note = "8 of 16 replays reached the time limit; each is judged on the part it covered"
        record.sensitive = sensitive
        try await DashboardCommandTests.seed(data + "/history.sqlite", [record])
        let show = try await CommandRunner.run("wehe", ["results", "show", "1", "--data-dir", data])
        #expect(show.status == 0, "\(show.stderr)")
        let text = show.stdout.replacingOccurrences(of: "\n    ", with: " ")
        #expect(text.contains("sensitive verdict (10 rounds): differentiation (throttled)"), "\(show.stdout)")
        #expect(text.contains("8 of 16 replays reached the time limit; each is judged on the part it covered"))
    }

    @Test("results show says which replay the time limit stopped, in text and in --json")
    func showPrintsStoredTimeLimit() async throws {
        let data = TestResources.temporaryDirectory("wehe-list")
        defer { try? FileManager.default.removeItem(atPath: data) }
        #expect(Self.settings(data))
        var record = DashboardCommandTests.record(count: 1)
        record.replays[0].reachedTimeLimit = true
        record.replays[0].clientDurationSeconds = 45.02
        record.replays[1].reachedTimeLimit = false
        var unknown = DashboardCommandTests.record(count: 2)
        unknown.replays[0].reachedTimeLimit = nil
        try await DashboardCommandTests.seed(data + "/history.sqlite", [record, unknown])

        let show = try await CommandRunner.run("wehe", ["results", "show", "1", "--data-dir", data])
        #expect(show.status == 0, "\(show.stderr)")
        let text = show.stdout.replacingOccurrences(of: "\n    ", with: " ")
        #expect(
            text.contains(
                "time limit: the original replay was stopped after 45 s; the verdicts judge the part it covered"),
            "\(show.stdout)")

        let json = try await CommandRunner.run("wehe", ["results", "show", "1", "--data-dir", data, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["replaysCutShort"] as? [String] == ["original"])
        let replays = try #require(object["replays"] as? [[String: Any]])
        #expect(replays.map { $0["reachedTimeLimit"] as? Bool } == [true, false])

        let other = try await CommandRunner.run("wehe", ["results", "show", "2", "--data-dir", data])
        #expect(other.status == 0, "\(other.stderr)")
        #expect(!other.stdout.contains("time limit"), "\(other.stdout)")
    }
}
