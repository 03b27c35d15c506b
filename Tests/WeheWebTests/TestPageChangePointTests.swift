import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// The test page shows the change in time within an interleaved test under the sensitive verdict,
/// in English and French; a test without a change says none was found; the test's JSON carries it.
@Suite("test page: change in time")
struct TestPageChangePointTests {
    static func sensitive(found: Bool) -> SensitiveSummary {
        var summary = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 0.002, alpha: 0.008, slowdown: 0.31,
            slowdownLower: 0.3, slowdownUpper: 0.32, confidenceLevel: 0.95, originalMeansMbps: [],
            controlMeansMbps: [])
        summary.changePoint = ChangePointSummary(
            found: found, kind: .stops, pValue: found ? 0.002 : 0.4, alpha: 0.008, rounds: 10, bins: 50,
            changeMegabytes: 3.06, changeSeconds: 0.5204, totalMegabytes: 6.2,
            before: .init(
                startMegabytes: 0, endMegabytes: 3.06, originalSeconds: 0.52, verdict: .differentiation,
                direction: .throttled, pValue: 0.002, slowdown: 0.4812, slowdownLower: 0.45, slowdownUpper: 0.5),
            after: .init(
                startMegabytes: 3.06, endMegabytes: 6.2, originalSeconds: 0.3, verdict: .noDifferentiation,
                direction: nil, pValue: 1, slowdown: -0.01, slowdownLower: -0.03, slowdownUpper: 0.02))
        return summary
    }

    @Test("found: where, when and each part's effect; not found: said so; JSON carries it")
    func page() async throws {
        let harness = try Harness()
        var records = try await seedPerson(harness.store, count: 2)
        records[0].sensitive = Self.sensitive(found: true)
        records[1].sensitive = Self.sensitive(found: false)
        try await harness.store.save(tests: records)
        let found = records[0].key.historyCount
        let none = records[1].key.historyCount
        let expected = records[0].sensitive?.changePoint
        try await harness.test { client in
            let english = try await client.execute(uri: "/tests/demo-user/\(found)", method: .get).text
            #expect(english.contains("<dt>Change during the test</dt>"))
            #expect(
                english.contains(
                    "throttled for the first 3.1 MB (0.52 s): slowed by 48% (95% CI 45% to 50%); the rest: faster by "
                        + "1% (95% CI -2% to 3%) (p-value 0.0020, 10 rounds)"), "\(english)")
            let french = try await client.execute(uri: "/tests/demo-user/\(found)?lang=fr", method: .get).text
            #expect(french.contains("<dt>Changement pendant le test</dt>"))
            #expect(french.contains("bridé pendant les 3,1 premiers Mo (0,52 s) : ralenti de 48\u{202F}%"))
            let plain = try await client.execute(uri: "/tests/demo-user/\(none)", method: .get).text
            #expect(plain.contains("no throttle that starts or stops was found (p-value 0.4000, 10 rounds)"))
            let json = try await client.execute(uri: "/api/tests/demo-user/\(found)", method: .get)
            // The result record's changePoint member (Docs/result.schema.json).
            let record = try #require(
                try JSONSerialization.jsonObject(with: Data(json.text.utf8)) as? [String: Any])
            let change = try #require(record["changePoint"] as? [String: Any])
            let want = try #require(expected)
            #expect(change["found"] as? Bool == want.found)
            #expect(change["kind"] as? String == want.kind?.rawValue)
            #expect(change["rounds"] as? Int == want.rounds)
            #expect(abs((change["changeMegabytes"] as? Double ?? -1) - want.changeMegabytes) < 1e-9)
            #expect((change["before"] as? [String: Any])?["verdict"] as? String == want.before?.verdict.rawValue)
        }
    }
}
