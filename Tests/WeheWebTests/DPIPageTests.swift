import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

@Suite("DPI search on the dashboards")
struct DPIPageTests {
    /// A finished search on test `historyCount` that found `Host: video.example` at C_1[100,118).
    static func found(historyCount: Int, carrier: String = "Orange (cellular)") -> DPIResultRecord {
        var payload = Array(repeating: UInt8(ascii: "x"), count: 230)
        let keyword = Array("video.example.com!".utf8)
        payload.replaceSubrange(100..<118, with: keyword)
        payload[99] = 0x0A
        return DPIResultRecord(
            id: DPISearchID(userID: DemoHistory.personUserID, carrierName: carrier, replayName: "Youtube-04042023"),
            historyCount: historyCount, startedAt: fixedNow.addingTimeInterval(-600), finishedAt: fixedNow,
            probes: 31, bytesUsed: 41_500_000, outcome: "rule", message: "rule: C_1[100,118)",
            rules: [
                DPIFoundRule(
                    packet: "C_1", left: 100, right: 118, content: keyword, matchingBytes: Array(100..<118),
                    packetPayload: payload)
            ])
    }

    @Test("a test page shows the rule: location, text, hex, the matched bytes marked in the dump, and the cost")
    func testPage() async throws {
        let harness = try Harness()
        let records = try await seedPerson(harness.store, count: 2)
        let record = try #require(records.first)
        try await harness.store.finish(dpiSearch: Self.found(historyCount: record.key.historyCount))
        try await harness.test { client in
            let html = try await client.execute(
                uri: "/tests/\(DemoHistory.personUserID)/\(record.key.historyCount)", method: .get
            ).text
            #expect(html.contains("Which bytes does the classifier match?"))
            #expect(html.contains("Packet C_1, bytes 100–117"))
            #expect(html.contains("<code class=\"dpi-text\">video.example.com!</code>"))
            #expect(html.contains("76 69 64 65 6f"))
            #expect(html.contains("31 probe replays, 41.5 MB transferred"))
            // The dump starts 16 bytes before the match on a row boundary; exactly the 18 matched bytes are marked
            // in the hex column and 18 in the text column, the newline before them shows as '.'.
            #expect(html.contains("<th scope=\"row\">80</th>"))
            #expect(html.components(separatedBy: "<mark>").count - 1 == 36)
            #expect(html.contains("<span>0a</span>"))
            #expect(html.contains("<mark>76</mark>"))
            // The other test has no search: no section.
            let other = try #require(records.last)
            let plain = try await client.execute(
                uri: "/tests/\(DemoHistory.personUserID)/\(other.key.historyCount)", method: .get
            ).text
            #expect(!plain.contains("dpi-heading"))
        }
    }

    @Test("a search without a rule says so, with its reason and cost")
    func noRule() async throws {
        let harness = try Harness()
        let record = try #require(try await seedPerson(harness.store, count: 1).first)
        var result = Self.found(historyCount: record.key.historyCount)
        result.outcome = "noDPIInFirstPackets"
        result.message = "NO DPI for first 10 pacs"
        result.rules = []
        result.probes = 10
        try await harness.store.finish(dpiSearch: result)
        try await harness.test { client in
            let html = try await client.execute(
                uri: "/tests/\(DemoHistory.personUserID)/\(record.key.historyCount)?lang=fr", method: .get
            ).text
            #expect(html.contains("Aucune règle de contenu trouvée (NO DPI for first 10 pacs)"))
            #expect(html.contains("10 rejeux de sonde"))
            #expect(!html.contains("<mark>"))
        }
    }

    @Test("a search stopped by its data budget is not shown as 'no content rule'")
    func budgetStop() async throws {
        let harness = try Harness()
        let record = try #require(try await seedPerson(harness.store, count: 1).first)
        var result = Self.found(historyCount: record.key.historyCount)
        result.outcome = "budgetExhausted"
        result.message = "budget of 8.0 MB used"
        result.rules = []
        result.probes = 4
        try await harness.store.finish(dpiSearch: result)
        try await harness.test { client in
            let html = try await client.execute(
                uri: "/tests/\(DemoHistory.personUserID)/\(record.key.historyCount)", method: .get
            ).text
            #expect(html.contains("Search stopped by its data budget before it found a rule (budget of 8.0 MB used)"))
            #expect(!html.contains("No content rule found"))
        }
    }

    @Test("the operator page lists found rules by provider and app, linked to their tests")
    func operatorPage() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let empty = try await client.execute(uri: "/operator/dpi", method: .get)
            #expect(empty.status == .ok)
            #expect(empty.text.contains("No DPI search has found a rule yet."))
        }
        try await harness.store.finish(dpiSearch: Self.found(historyCount: 3, carrier: "SFR (cellular)"))
        try await harness.store.finish(dpiSearch: Self.found(historyCount: 4, carrier: "Orange (cellular)"))
        var none = Self.found(historyCount: 5)
        none.outcome = "packetsExhausted"
        none.rules = []
        try await harness.store.finish(dpiSearch: none)
        try await harness.test { client in
            let html = try await client.execute(uri: "/operator/dpi", method: .get).text
            #expect(html.contains("Classifier rules found by DPI searches"))
            #expect(html.contains("aria-current=\"page\"") || html.contains("DPI rules"))
            let rows = html.components(separatedBy: "<tr><td>").dropFirst()
            #expect(rows.count == 2)
            #expect(rows.first?.hasPrefix("Orange (cellular)") == true)
            #expect(rows.last?.hasPrefix("SFR (cellular)") == true)
            #expect(html.contains("href=\"/tests/\(DemoHistory.personUserID)/3?lang=en\""))
            #expect(html.contains("video.example.com!"))
        }
    }
}
