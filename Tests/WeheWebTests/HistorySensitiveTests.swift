import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// The history list shows the sensitive verdict of interleaved tests under the published badge, in the
/// page's language, and its JSON carries it; tests without one show nothing extra.
@Suite("history list: the sensitive verdict")
struct HistorySensitiveTests {
    static func sensitive(_ verdict: Verdict, _ direction: DifferentiationDirection?, slowdown: Double)
        -> SensitiveSummary
    {
        SensitiveSummary(
            verdict: verdict, direction: direction, rounds: 10, pValue: verdict == .differentiation ? 0.002 : 0.6,
            alpha: 0.008, slowdown: slowdown, slowdownLower: slowdown - 0.05, slowdownUpper: slowdown + 0.05,
            confidenceLevel: 0.95, originalMeansMbps: [], controlMeansMbps: [])
    }

    @Test("slowed, no differentiation and inconclusive, in English and French; a plain test gets no line")
    func marks() async throws {
        let harness = try Harness()
        var records = try await seedPerson(harness.store, count: 4)
        records[0].sensitive = Self.sensitive(.differentiation, .throttled, slowdown: 0.184)
        records[1].sensitive = Self.sensitive(.noDifferentiation, nil, slowdown: 0.01)
        records[2].sensitive = Self.sensitive(.inconclusive, nil, slowdown: 0.3)
        try await harness.store.save(tests: records)
        let slowed = records[0].sensitive
        try await harness.test { client in
            let english = try await client.execute(uri: "/", method: .get).text
            #expect(english.components(separatedBy: "class=\"sensitive-mark\"").count - 1 == 3)
            #expect(english.contains("<span class=\"sensitive-mark\">Sensitive verdict: slowed by 18 %</span>"))
            #expect(english.contains("<span class=\"sensitive-mark\">Sensitive verdict: no differentiation</span>"))
            #expect(english.contains("<span class=\"sensitive-mark\">Sensitive verdict: inconclusive</span>"))
            // The mark sits in the result cell of its own row (the row of history count 1).
            let row = try #require(
                english.components(separatedBy: "<tr>").first { $0.contains("/tests/demo-user/1?lang=en") })
            #expect(row.contains("slowed by 18 %"))
            let plain = try #require(
                english.components(separatedBy: "<tr>").first { $0.contains("/tests/demo-user/4?lang=en") })
            #expect(!plain.contains("sensitive-mark"))
            let french = try await client.execute(uri: "/?lang=fr", method: .get).text
            #expect(french.contains("Verdict sensible : ralenti de 18 %"))
            #expect(french.contains("Verdict sensible : pas de différenciation"))
            #expect(french.contains("Verdict sensible : non concluant"))
            let json = try await client.execute(uri: "/api/history", method: .get)
            #expect(json.status == .ok)
            // The result records (Docs/result.schema.json): the sensitive members of test 1, none for test 4.
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.text.utf8)) as? [[String: Any]])
            let first = try #require(rows.first { $0["historyCount"] as? Int == 1 })
            #expect(first["sensitiveVerdict"] as? String == slowed?.verdict.rawValue)
            #expect(first["sensitiveRounds"] as? Int == slowed?.rounds)
            #expect(first["method"] as? String == "interleaved")
            let plainRow = try #require(rows.first { $0["historyCount"] as? Int == 4 })
            #expect(plainRow["sensitiveVerdict"] is NSNull)
            #expect(plainRow["method"] as? String == "published")
        }
    }
}
