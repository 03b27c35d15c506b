import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

@Suite("person pages")
struct PersonRouteTests {
    @Test("the history lists each test with date, app, provider, verdict badge and both throughputs")
    func historyListsTests() async throws {
        let harness = try Harness()
        let records = try await seedPerson(harness.store, count: 8)
        try await harness.test { client in
            let response = try await client.execute(uri: "/", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/html; charset=utf-8")
            let html = response.text
            #expect(html.contains("<html lang=\"en\">"))
            #expect(html.contains("<table class=\"history\">"))
            #expect(html.components(separatedBy: "<tr>").count - 1 == records.count + 1)
            for record in records {
                #expect(html.contains("href=\"/tests/demo-user/\(record.key.historyCount)?lang=en\""))
                let original = record.replay(0)?.samples.meanMbps ?? -1
                #expect(html.contains(String(format: "%.2f", original)))
            }
            #expect(html.contains("Orange (cellular)"))
            #expect(html.contains("class=\"badge badge-"))
            #expect(html.contains("class=\"mini-bars\""))
            let newestFirst = try #require(records.max { $0.key.historyCount < $1.key.historyCount })
            let first = try #require(html.range(of: "/tests/demo-user/"))
            #expect(html[first.upperBound...].hasPrefix("\(newestFirst.key.historyCount)?"))
        }
    }

    @Test("the history pages by history count and rejects a malformed cursor")
    func historyPaging() async throws {
        let harness = try Harness(historyPageSize: 5)
        _ = try await seedPerson(harness.store, count: 12)
        try await harness.test { client in
            let first = try await client.execute(uri: "/", method: .get).text
            #expect(first.contains("href=\"/?before=8&amp;lang=en\""))
            let second = try await client.execute(uri: "/?before=8", method: .get)
            #expect(second.status == .ok)
            #expect(second.text.contains("/tests/demo-user/7?lang=en"))
            #expect(!second.text.contains("/tests/demo-user/8?lang=en"))
            #expect(second.text.contains("href=\"/?before=3&amp;lang=en\""))
            let last = try await client.execute(uri: "/?before=3", method: .get).text
            #expect(!last.contains("rel=\"next\""))
            #expect(last.contains("href=\"/?lang=en\">← Newest tests"))
            for bad in ["/?before=-1", "/?before=abc", "/?before=99999999999999999999999"] {
                let response = try await client.execute(uri: bad, method: .get)
                #expect(response.status == .badRequest)
                #expect(response.text.contains("&#39;before&#39; must be a non-negative integer"))
                #expect(response.text.contains("<h1>This request is not valid</h1>"))
            }
        }
    }

    @Test("the language follows ?lang= first, then Accept-Language, and defaults to English")
    func language() async throws {
        let harness = try Harness()
        _ = try await seedPerson(harness.store, count: 2)
        try await harness.test { client in
            let french = try await client.execute(
                uri: "/", method: .get, headers: [.acceptLanguage: "fr-CA,fr;q=0.9,en;q=0.5"])
            #expect(french.text.contains("<html lang=\"fr\">"))
            #expect(french.text.contains("Vos résultats"))
            let override = try await client.execute(uri: "/?lang=en", method: .get, headers: [.acceptLanguage: "fr"])
            #expect(override.text.contains("Your test results"))
            let unknown = try await client.execute(
                uri: "/?lang=xx", method: .get, headers: [.acceptLanguage: "de, *;q=0.1"])
            #expect(unknown.status == .ok)
            #expect(unknown.text.contains("<html lang=\"en\">"))
        }
    }

    @Test("without a configured user the history says so instead of failing")
    func noUser() async throws {
        let harness = try Harness(userID: nil)
        try await harness.test { client in
            let response = try await client.execute(uri: "/", method: .get)
            #expect(response.status == .ok)
            #expect(
                response.text.contains(
                    Strings(.english)["history_no_user"].replacingOccurrences(of: "'", with: "&#39;")))
            let api = try await client.execute(uri: "/api/history", method: .get)
            #expect(api.status == .notFound)
        }
    }

    @Test("an empty history invites to run a test")
    func emptyHistory() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let html = try await client.execute(uri: "/", method: .get).text
            #expect(html.contains("No tests yet."))
            #expect(!html.contains("<table"))
        }
    }

    @Test("a test page draws both series over time, their CDFs with the KS gap, and explains the verdict")
    func testPage() async throws {
        let harness = try Harness()
        let original = (0..<50).map { 1.4 + Double($0 % 5) * 0.05 }
        let control = (0..<50).map { 8 + Double($0 % 7) * 0.5 }
        let summary = makeSummary(verdict: .differentiation, original: 1.5, control: 9.5, p: 1e-12)
        try await harness.store.save(
            test: customTest(
                count: 4, provider: "Orange (cellular)", replay: "Netflix-06072024", original: original,
                control: control, summary: summary))
        try await harness.test { client in
            let response = try await client.execute(uri: "/tests/demo-user/4", method: .get)
            #expect(response.status == .ok)
            let html = response.text
            #expect(html.contains("<h1><span class=\"app-icon large hue-"))
            #expect(html.contains("Netflix looks throttled on Orange (cellular)</h1>"))
            #expect(html.contains("id=\"throughput-chart\""))
            #expect(html.contains("id=\"cdf-chart\""))
            #expect(html.contains("<path d=\"M") && html.contains("class=\"series series-original\""))
            #expect(html.contains("class=\"series series-control\""))
            #expect(html.contains("class=\"series series-original step\""))
            #expect(html.contains("class=\"ks-gap\""))
            #expect(html.contains(">D = 1.00<"))
            #expect(html.contains("Netflix looks throttled: its traffic averaged 1.50 Mbit/s against 9.50 Mbit/s"))
            #expect(html.contains("(84% slower, above the 50% threshold)"))
            #expect(html.contains("KS p-value 1.0e-12, below 0.0100"))
            #expect(html.contains("<dt>Samples (app / control)</dt><dd>50 / 50</dd>"))
            let french = try await client.execute(uri: "/tests/demo-user/4?lang=fr", method: .get).text
            #expect(french.contains("Netflix semble ralenti"))
            #expect(french.contains("1,50 Mbit/s"))
        }
    }

    @Test("each verdict gets its own badge and sentence")
    func verdictSentences() async throws {
        let harness = try Harness()
        let samples = (0..<20).map { 5 + Double($0 % 3) }
        let cases: [(AnalysisSummary?, String, String)] = [
            (
                makeSummary(verdict: .noDifferentiation, original: 5, control: 5.2, p: 0.4), "No differentiation:",
                "badge-none"
            ),
            (
                makeSummary(verdict: .inconclusive, original: 2, control: 6, p: 0.2),
                "Inconclusive: the averages differ by 67%", "badge-inconclusive"
            ),
            (
                makeSummary(verdict: .inconclusive, original: 2, control: 6, p: 0.001, ratio: 0.5, iosRules: true),
                "did not hold up when the samples were resampled", "badge-inconclusive"
            ),
            (makeSummary(verdict: .differentiation, original: 9, control: 3), "looks prioritized", "badge-diff"),
            (makeSummary(verdict: .blocked, original: 0, control: 3), "The tested port looks blocked", "badge-blocked"),
            (nil, "has not been analysed yet", "badge-pending"),
        ]
        for (index, item) in cases.enumerated() {
            try await harness.store.save(
                test: customTest(
                    count: index + 1, provider: "P", replay: "Spotify-06102024", original: samples, control: samples,
                    summary: item.0))
        }
        try await harness.test { client in
            for (index, item) in cases.enumerated() {
                let html = try await client.execute(uri: "/tests/demo-user/\(index + 1)", method: .get).text
                #expect(html.contains(item.1), "case \(index)")
                #expect(html.contains("class=\"badge \(item.2)\""), "case \(index)")
            }
        }
    }

    @Test("unknown or malformed test addresses give a 404 or 400 page, never a stack trace")
    func testPageErrors() async throws {
        let harness = try Harness()
        _ = try await seedPerson(harness.store, count: 2)
        try await harness.store.save(
            test: customTest(
                user: "someone-else", count: 1, provider: "P", replay: "Zoom-05062024", original: [1], control: [1]))
        try await harness.test { client in
            let missing = try await client.execute(uri: "/tests/demo-user/999", method: .get)
            #expect(missing.status == .notFound)
            #expect(missing.text.contains("<h1>Not found</h1>"))
            let other = try await client.execute(uri: "/tests/someone-else/1", method: .get)
            #expect(other.status == .notFound)
            let malformed = try await client.execute(uri: "/tests/demo-user/abc", method: .get)
            #expect(malformed.status == .badRequest)
            #expect(malformed.text.contains("non-negative integer"))
            let negative = try await client.execute(uri: "/tests/demo-user/-3", method: .get)
            #expect(negative.status == .badRequest)
            let api = try await client.execute(uri: "/api/tests/demo-user/999", method: .get)
            #expect(api.status == .notFound)
            #expect(api.headers[.contentType] == "application/json; charset=utf-8")
            #expect(api.text.contains("\"code\":\"notFound\""))
            for response in [missing, malformed, api] {
                #expect(!response.text.contains("Swift"))
                #expect(!response.text.contains(".swift"))
            }
        }
    }

    @Test("the JSON API returns the history and a test in full as result records (Docs/result.schema.json)")
    func jsonAPI() async throws {
        let harness = try Harness()
        let records = try await seedPerson(harness.store, count: 3)
        try await harness.test { client in
            let history = try await client.execute(uri: "/api/history", method: .get)
            #expect(history.status == .ok)
            let rows = try #require(
                try JSONSerialization.jsonObject(with: Data(history.text.utf8)) as? [[String: Any]])
            #expect(rows.map { $0["historyCount"] as? Int } == [3, 2, 1])
            #expect(rows.allSatisfy { $0["schemaVersion"] as? Int == 1 && $0["kind"] as? String == "test" })
            #expect(rows.allSatisfy { $0["replays"] == nil })
            let test = try await client.execute(uri: "/api/tests/demo-user/2", method: .get)
            #expect(test.headers[HTTPField.Name("content-disposition")!] == "attachment; filename=\"wehe-test-2.json\"")
            let record = try #require(
                try JSONSerialization.jsonObject(with: Data(test.text.utf8)) as? [String: Any])
            let expected = try #require(records.first { $0.key.historyCount == 2 })
            let series = try #require(record["replays"] as? [[String: Any]])
            // The same samples (to the last digit or so: JSON text carries the shortest decimal form).
            let served = try #require(series.first?["mbps"] as? [Double])
            let stored = try #require(expected.replay(0)?.samples.mbps)
            #expect(served.count == stored.count)
            #expect(zip(served, stored).allSatisfy { abs($0 - $1) <= 1e-9 * max(1, abs($1)) })
            #expect(record["verdict"] as? String == expected.mainAnalysis?.summary.verdict.rawValue)
            #expect(record["replay"] as? String == expected.metadata.replayName)
        }
    }

    @Test("values from the store are escaped in HTML and SVG")
    func escaping() async throws {
        let harness = try Harness()
        let hostile = "<script>alert(1)</script>"
        let replay = "\"><img src=x onerror=alert(2)>-01012024"
        try await harness.store.save(
            test: customTest(
                count: 1, provider: hostile, replay: replay, original: [1, 2, 3], control: [3, 4, 5],
                summary: makeSummary(verdict: .differentiation, original: 2, control: 4)))
        try await harness.test { client in
            for uri in ["/", "/tests/demo-user/1", "/operator/?from=2026-03-01&to=2026-03-15"] {
                let html = try await client.execute(uri: uri, method: .get).text
                #expect(!html.contains("<script>alert"), "\(uri)")
                #expect(!html.contains("<img src=x"), "\(uri)")
                #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(uri)")
            }
        }
    }

    @Test("a Host other than the allowed ones is refused on person and operator pages (DNS rebinding guard)")
    func hostCheck() async throws {
        // The router test client always sends the authority `localhost`.
        let refusing = try Harness(allowedHosts: ["127.0.0.1:8080"])
        try await refusing.test { client in
            let refused = try await client.execute(uri: "/", method: .get)
            #expect(refused.status == .forbidden)
            #expect(refused.text.contains("only answers requests addressed to its own local address"))
            let api = try await client.execute(uri: "/api/history", method: .get)
            #expect(api.status == .forbidden)
            let operatorPage = try await client.execute(uri: "/operator/", method: .get)
            #expect(operatorPage.status == .forbidden)
            let operatorData = try await client.execute(uri: "/operator/data.json", method: .get)
            #expect(operatorData.status == .forbidden)
        }
        let accepting = try Harness(allowedHosts: ["localhost"])
        try await accepting.test { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .ok)
            let operatorPage = try await client.execute(uri: "/operator/", method: .get)
            #expect(operatorPage.status == .ok)
        }
        // An entry without a port accepts that host on any port (the port of `wehe dashboard --port 0` is only
        // known once bound).
        #expect(Dashboard.hostName("localhost:51234") == "localhost")
        #expect(Dashboard.hostName("127.0.0.1") == "127.0.0.1")
        #expect(Dashboard.hostName("[::1]:8080") == "[::1]")
        #expect(Dashboard.hostName("attacker.example:80") == "attacker.example")
    }

    @Test("an unavailable database gives a 503 page or JSON error")
    func storeUnavailable() async throws {
        let harness = try Harness()
        _ = try await seedPerson(harness.store, count: 2)
        await harness.store.close()
        try await harness.test { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .serviceUnavailable)
            #expect(page.text.contains("Temporarily unavailable"))
            #expect(page.text.contains("The result database is not available right now (closed)."))
            let test = try await client.execute(uri: "/tests/demo-user/1", method: .get)
            #expect(test.status == .serviceUnavailable)
            let api = try await client.execute(uri: "/api/history", method: .get)
            #expect(api.status == .serviceUnavailable)
            #expect(api.text.contains("\"code\":\"storeUnavailable\""))
            let operatorPage = try await client.execute(uri: "/operator/", method: .get)
            #expect(operatorPage.status == .serviceUnavailable)
        }
    }

    @Test("static assets are served with their types; unknown names are 404")
    func staticFiles() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let css = try await client.execute(uri: "/static/dashboard.css", method: .get)
            #expect(css.status == .ok)
            #expect(css.headers[.contentType] == "text/css; charset=utf-8")
            #expect(css.text.contains("prefers-color-scheme"))
            let js = try await client.execute(uri: "/static/run.js", method: .get)
            #expect(js.headers[.contentType] == "text/javascript; charset=utf-8")
            let operatorCSS = try await client.execute(uri: "/operator/static/dashboard.css", method: .get)
            #expect(operatorCSS.status == .ok)
            let missing = try await client.execute(uri: "/static/..%2Fsecret", method: .get)
            #expect(missing.status == .notFound)
        }
    }
}
