import Foundation
import Testing
import WeheCore
import WeheStore
import WeheTestKit

/// `wehe results show` prints and exports the change in time within an interleaved test, read back
/// from the SQLite history (built binary).
@Suite("wehe results show: change in time (built binary, seeded history)")
struct ChangePointShowTests {
    static func record(found: Bool) -> TestRecord {
        var record = DashboardCommandTests.record()
        var sensitive = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 2.0 / 1024, alpha: 0.008,
            slowdown: 0.31, slowdownLower: 0.3, slowdownUpper: 0.32, confidenceLevel: 0.95,
            originalMeansMbps: [60, 61], controlMeansMbps: [89, 88.5])
        sensitive.changePoint = ChangePointSummary(
            found: found, kind: .stops, pValue: found ? 2.0 / 1024 : 0.4, alpha: 0.008, rounds: 10, bins: 50,
            changeMegabytes: 3.06, changeSeconds: 0.5204, totalMegabytes: 6.2,
            before: .init(
                startMegabytes: 0, endMegabytes: 3.06, originalSeconds: 0.52, verdict: .differentiation,
                direction: .throttled, pValue: 2.0 / 1024, slowdown: 0.4812, slowdownLower: 0.45, slowdownUpper: 0.5),
            after: .init(
                startMegabytes: 3.06, endMegabytes: 6.2, originalSeconds: 0.3, verdict: .noDifferentiation,
                direction: nil, pValue: 1, slowdown: -0.01, slowdownLower: -0.03, slowdownUpper: .infinity))
        record.sensitive = sensitive
        return record
    }

    @Test("found: the line and the changePoint object; not found: said so", arguments: [true, false])
    func show(found: Bool) async throws {
        let data = TestResources.temporaryDirectory("wehe-change")
        let settings = """
            {"server":"127.0.0.1","userID":"\(DashboardCommandTests.userID)","lastHistoryCount":1,\
            "ruleSet":"android","confirmation":true,"consentAccepted":true}
            """
        #expect(TestResources.write(settings, to: data + "/settings.json"))
        try await DashboardCommandTests.seed(data + "/history.sqlite", [Self.record(found: found)])
        let show = try await CommandRunner.run(
            "wehe", ["results", "show", "1", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(show.status == 0, "\(show.stderr)")
        let text = show.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: " ")
        if found {
            #expect(
                text.contains(
                    "change in time (10 rounds): throttle stops after the first 3.1 MB (0.52 s): the first 3.1 MB "
                        + "slowed by 48 % (95 % CI 45–50 %), the rest faster by 1 % (95 % CI …–3 %), p 0.001953125"),
                "\(show.stdout)")
        } else {
            #expect(text.contains("change in time: none found, p 0.4"), "\(show.stdout)")
        }
        let json = try await CommandRunner.run(
            "wehe", ["results", "show", "1", "--json", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let change = try #require(object["changePoint"] as? [String: Any], "\(json.stdout)")
        #expect(change["found"] as? Bool == found)
        #expect(change["kind"] as? String == "stops")
        #expect(change["changeMegabytes"] as? Double == 3.06)
        #expect(change["changeSeconds"] as? Double == 0.5204)
        let after = try #require(change["after"] as? [String: Any])
        #expect(after["slowdownUpper"] is NSNull)
        #expect((change["before"] as? [String: Any])?["verdict"] as? String == "differentiation")
        #expect((change["effect"] as? String)?.hasPrefix("throttle stops after the first 3.1 MB") == true)
    }
}
