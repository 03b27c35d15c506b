import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheAnalysis
import WeheCore
import WeheStore

@testable import WeheWeb

struct FixedLocalizations: LocalizationListing {
    let runs: [LocalizationRun]
    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws -> [LocalizationRun] {
        Array(runs.prefix(limit))
    }
}

struct FixedHealth: ServerHealthSource {
    func healthSnapshot() async -> ServerHealthSnapshot {
        ServerHealthSnapshot(
            startedAt: fixedNow.addingTimeInterval(-86_400), items: [HealthItem(name: "Active sessions", value: "7")])
    }
}

@Suite("operator pages")
struct OperatorRouteTests {
    @Test("with an operator token the operator pages answer only requests that carry it (Bearer or Basic)")
    func operatorLogin() async throws {
        let token = "a-long-operator-token-123"
        let harness = try Harness(operatorToken: token)
        let challenge = try #require(HTTPField.Name("www-authenticate"))
        try await harness.test { client in
            for uri in ["/operator/", "/operator/data.json", "/operator/findings.csv"] {
                let anonymous = try await client.execute(uri: uri, method: .get)
                #expect(anonymous.status == .unauthorized, "\(uri)")
                #expect(anonymous.headers[challenge]?.hasPrefix("Basic") == true)
                let wrong = try await client.execute(
                    uri: uri, method: .get, headers: [.authorization: "Bearer not-the-token"])
                #expect(wrong.status == .unauthorized, "\(uri)")
            }
            let bearer = try await client.execute(
                uri: "/operator/", method: .get, headers: [.authorization: "Bearer \(token)"])
            #expect(bearer.status == .ok)
            let basic = try await client.execute(
                uri: "/operator/data.json", method: .get,
                headers: [.authorization: "Basic " + Data("operator:\(token)".utf8).base64EncodedString()])
            #expect(basic.status == .ok)
            // The person pages are not behind the operator login.
            let person = try await client.execute(uri: "/", method: .get)
            #expect(person.status == .ok)
        }
    }

    static let range = "from=2026-02-20&to=2026-03-15"

    func decodeOverview(_ text: String) throws -> OperatorOverview {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(OperatorOverview.self, from: Data(text.utf8))
    }

    @Test("the overview shows tests per day, verdicts per app and provider, the matrix, WeHeY runs and health")
    func overviewPage() async throws {
        let harness = try Harness(
            localizations: FixedLocalizations(runs: DemoHistory.localizationRuns(now: fixedNow)), health: FixedHealth())
        let records = try await seedCrowd(harness.store, count: 300)
        try await harness.store.append(events: DemoHistory.sessionEvents(now: fixedNow))
        try await harness.test { client in
            let response = try await client.execute(uri: "/operator/?" + Self.range, method: .get)
            #expect(response.status == .ok)
            let html = response.text
            #expect(html.contains("id=\"per-day-chart\""))
            #expect(html.contains("<rect x="))
            #expect(html.contains("id=\"apps-table\"") && html.contains("id=\"providers-table\""))
            #expect(html.contains("id=\"matrix-table\""))
            #expect(html.contains("<th scope=\"row\">T-Mobile (cellular)</th>"))
            #expect(html.contains("<th scope=\"col\"><span>YouTube</span></th>"))
            #expect(html.contains("<span class=\"card-value\">300</span>"))
            #expect(html.contains("In the access network"))
            #expect(html.contains("Active sessions"))
            #expect(html.contains("<dt>Session errors</dt><dd>1 "))
            #expect(html.contains("Needs attention"))
            #expect(
                html.contains(
                    "href=\"/operator/data.csv?from=2026-02-20&amp;to=2026-03-15&amp;table=matrix&amp;lang=en\""))
            #expect(html.contains("<option value=\"Comcast\">Comcast</option>"))
            let json = try await client.execute(uri: "/operator/data.json?" + Self.range, method: .get)
            let overview = try decodeOverview(json.text)
            #expect(overview.totalTests == records.count)
            #expect(overview.perDay.reduce(0) { $0 + $1.tests } == records.count)
            #expect(overview.perDay.count == 24)
            let expectedDiff = records.filter { $0.mainAnalysis?.summary.verdict == .differentiation }.count
            #expect(overview.differentiationTests == expectedDiff)
            #expect(overview.matrix.reduce(0) { $0 + $1.tests } == records.count)
            let tmobile = try #require(overview.perProvider.first { $0.name == "T-Mobile (cellular)" })
            #expect(tmobile.tests == records.filter { $0.metadata.provider == "T-Mobile (cellular)" }.count)
            #expect(overview.localizations?.count == 5)
        }
    }

    @Test("filters by provider and app narrow every table; the lists still offer every value")
    func filters() async throws {
        let harness = try Harness()
        let records = try await seedCrowd(harness.store, count: 200)
        try await harness.test { client in
            let uri =
                "/operator/data.json?" + Self.range
                + "&provider=Comcast&provider=Verizon+%28cellular%29&app=Youtube-02202024"
            let overview = try decodeOverview(try await client.execute(uri: uri, method: .get).text)
            let expected = records.filter {
                ["Comcast", "Verizon (cellular)"].contains($0.metadata.provider ?? "")
                    && $0.metadata.replayName == "Youtube-02202024"
            }
            #expect(overview.totalTests == expected.count)
            #expect(overview.perDay.reduce(0) { $0 + $1.tests } == expected.count)
            #expect(Set(overview.perProvider.map(\.name)).isSubset(of: ["Comcast", "Verizon (cellular)"]))
            #expect(overview.availableProviders.count == DemoHistory.providers.count)
            let page = try await client.execute(uri: "/operator/?" + Self.range + "&provider=Comcast", method: .get)
                .text
            #expect(page.contains("<option value=\"Comcast\" selected>Comcast</option>"))
        }
    }

    @Test("malformed or impossible filters are a 400 page (HTML) or JSON error (downloads)")
    func badFilters() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let cases = [
                ("from=2026-13-01", "'from' must be a date written YYYY-MM-DD"),
                ("from=2026-02-30", "'from' must be a date written YYYY-MM-DD"),
                ("to=yesterday", "'to' must be a date written YYYY-MM-DD"),
                ("from=2026-03-10&to=2026-03-01", "'from' must not be after 'to'"),
                ("from=1990-01-01&to=2026-01-01", "at most 3660 days"),
                ("provider=%01bad", "control characters"),
            ]
            for (query, message) in cases {
                let page = try await client.execute(uri: "/operator/?" + query, method: .get)
                #expect(page.status == .badRequest, "\(query)")
                #expect(page.text.contains(message.replacingOccurrences(of: "'", with: "&#39;")), "\(query)")
                let data = try await client.execute(uri: "/operator/data.json?" + query, method: .get)
                #expect(data.status == .badRequest, "\(query)")
                #expect(data.text.contains("\"code\":\"invalidParameter\""))
            }
            let table = try await client.execute(uri: "/operator/data.csv?table=secrets", method: .get)
            #expect(table.status == .badRequest)
        }
    }

    @Test("each CSV table downloads what the page shows")
    func csvDownloads() async throws {
        let harness = try Harness()
        let records = try await seedCrowd(harness.store, count: 120)
        try await harness.test { client in
            let matrix = try await client.execute(uri: "/operator/data.csv?table=matrix&" + Self.range, method: .get)
            #expect(matrix.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(
                matrix.headers[HTTPField.Name("content-disposition")!]
                    == "attachment; filename=\"wehe-matrix-2026-02-20-2026-03-15.csv\"")
            let lines = matrix.text.split(separator: "\r\n")
            #expect(lines.first == "provider,replay,tests,differentiation")
            let total = lines.dropFirst().compactMap { Int($0.split(separator: ",").reversed()[1]) }.reduce(0, +)
            #expect(total == records.count)
            let days = try await client.execute(uri: "/operator/data.csv?table=days&" + Self.range, method: .get).text
            #expect(days.hasPrefix("day,tests\r\n2026-02-20,"))
            for table in ["apps", "providers", "wehey", "health"] {
                let response = try await client.execute(
                    uri: "/operator/data.csv?table=\(table)&" + Self.range, method: .get)
                #expect(response.status == .ok, "\(table)")
            }
        }
    }

    @Test("the findings page finds the fixed rate of a throttled group and counts its tests")
    func findings() async throws {
        let harness = try Harness()
        var history = DemoHistory(seed: 21, samplesPerReplay: 40, analyse: false)
        let capped = DemoHistory.Provider(
            name: "CapNet", capacity: 30, caps: ["Netflix-06072024": 1.5], blocked: [], weight: 1)
        let open = DemoHistory.Provider(name: "OpenNet", capacity: 30, caps: [:], blocked: [], weight: 1)
        let netflix = try #require(DemoHistory.apps.first { $0.replay == "Netflix-06072024" })
        var records: [TestRecord] = []
        for index in 0..<130 {
            for (offset, provider) in [capped, open].enumerated() {
                records.append(
                    history.test(
                        key: TestKey(userID: "u\(index)", historyCount: offset), provider: provider, app: netflix,
                        startedAt: fixedNow.addingTimeInterval(-Double(index) * 3_000)))
            }
        }
        try await harness.store.save(tests: records)
        try await harness.test { client in
            let page = try await client.execute(uri: "/operator/findings?" + Self.range, method: .get)
            #expect(page.status == .ok)
            let decoder = JSONDecoder()
            let reports = try decoder.decode(
                [CrowdGroupReport].self,
                from: Data(
                    try await client.execute(uri: "/operator/findings.json?" + Self.range, method: .get).text.utf8))
            let cap = try #require(reports.first { $0.provider == "CapNet" })
            #expect(cap.totalTests == 130)
            let rate = try #require(cap.rates.first)
            #expect(abs(rate.rate - 1.5) < 0.3)
            #expect(reports.first { $0.provider == "OpenNet" }?.rates.isEmpty == true)
            #expect(
                page.text.contains(
                    "<tr class=\"found\"><td>CapNet</td><th scope=\"row\">Netflix</th><td class=\"num\">130</td>"))
            let csv = try await client.execute(uri: "/operator/findings.csv?" + Self.range, method: .get).text
            #expect(csv.contains("CapNet,Netflix-06072024,130,"))
            let overview = try await client.execute(uri: "/operator/?" + Self.range, method: .get).text
            #expect(overview.contains("class=\"found\""))
        }
    }

    @Test("a selection larger than the analysis limit asks to narrow it")
    func findingsLimit() async throws {
        let harness = try Harness(crowdTestLimit: 50)
        _ = try await seedCrowd(harness.store, count: 120)
        try await harness.test { client in
            let page = try await client.execute(uri: "/operator/findings?" + Self.range, method: .get)
            #expect(page.status == .ok)
            #expect(page.text.contains("This selection holds 120 tests, more than the 50"))
            let json = try await client.execute(uri: "/operator/findings.json?" + Self.range, method: .get)
            #expect(json.status == .badRequest)
        }
    }

    @Test("without a WeHeY listing the section says so; French works on operator pages too")
    func weheyUnavailableAndFrench() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let html = try await client.execute(uri: "/operator/?lang=fr", method: .get).text
            #expect(html.contains("Ce serveur ne liste pas les localisations WeHeY."))
            #expect(html.contains("Tableau de bord opérateur"))
        }
    }
}
