import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// A settings editor that keeps its settings in memory and records every change it is asked for.
actor RecordingSettings: SettingsEditor {
    private(set) var values: [String: String] = ["server": "wehe4.meddle.mobi", "p-threshold": "default"]
    private(set) var applied: [[String]] = []
    nonisolated let formToken = "token-0123456789"

    func fields() async throws -> [SettingField] {
        values.keys.sorted().map { SettingField(key: $0, value: values[$0] ?? "", help: "help of \($0)") }
    }

    func apply(_ changes: [(key: String, value: String)]) async throws {
        applied.append(changes.map { "\($0.key)=\($0.value)" })
        var next = values
        for change in changes {
            if change.key == "p-threshold", change.value != "default", Double(change.value) == nil {
                throw ScriptError(text: "p-threshold must be a fraction in [0, 1] or 'default'")
            }
            next[change.key] = change.value
        }
        values = next
    }

    /// Another command changing a key while the page is open.
    func changeElsewhere(_ key: String, _ value: String) { values[key] = value }
}

@Suite("readable results: captions, not measured, live chart runs, settings page, operator tables")
struct ReadableResultsTests {
    func harness(settings: (any SettingsEditor)?, store: InMemoryResultStore = InMemoryResultStore()) throws
        -> (Dashboard, Application<RouterResponder<BasicRequestContext>>)
    {
        let dashboard = try Dashboard(
            configuration: DashboardConfiguration(
                store: store, userID: DemoHistory.personUserID, catalog: DemoHistory.catalog, now: { fixedNow },
                settingsEditor: settings))
        let router = Router()
        dashboard.addPersonRoutes(to: router)
        dashboard.addOperatorRoutes(to: router)
        return (dashboard, Application(router: router, services: [dashboard.runner]))
    }

    /// What a handler knows of a GET request to `path`.
    static func info(_ path: String, _ dashboard: Dashboard) -> RequestInfo {
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: path),
            body: .init(buffer: ByteBuffer()))
        return RequestInfo(request: request, configuration: dashboard.configuration)
    }

    @Test("the caption under the average bars follows the verdict, in English and French")
    func captionsFollowVerdict() {
        for language in [Language.english, .french] {
            let strings = Strings(language)
            let diff = VerdictText.barsCaption(
                of: makeSummary(verdict: .differentiation, original: 1, control: 9), strings: strings)
            let none = VerdictText.barsCaption(
                of: makeSummary(verdict: .noDifferentiation, original: 9, control: 9), strings: strings)
            let unclear = VerdictText.barsCaption(
                of: makeSummary(verdict: .inconclusive, original: 5, control: 9), strings: strings)
            let blocked = VerdictText.barsCaption(
                of: makeSummary(verdict: .blocked, original: 0, control: 9), strings: strings)
            #expect(Set([diff, none, unclear, blocked]).count == 4)
            let noSign = language == .english ? "no sign of differentiation" : "aucun signe de différenciation"
            #expect(none.contains(noSign))
            #expect(!diff.contains(noSign) && !unclear.contains(noSign) && !blocked.contains(noSign))
            #expect(diff.contains(language == .english ? "treats the app's traffic differently" : "différemment"))
            #expect(unclear.contains(language == .english ? "cannot tell" : "ne peut pas dire"))
        }
    }

    @Test("a throttled test page never says 'no sign of differentiation'; a replay without samples is 'not measured'")
    func testPageCaptionAndNotMeasured() async throws {
        let store = InMemoryResultStore()
        let throttled = customTest(
            count: 5, provider: "Orange", replay: "Netflix-06072024", original: [1.5, 1.4, 1.6],
            control: [9, 8.5, 9.2], summary: makeSummary(verdict: .differentiation, original: 1.5, control: 8.9))
        // The original replay never produced a sample: the analysis's 0 must not be shown as a speed.
        let unmeasured = customTest(
            count: 6, provider: "Orange", replay: "Netflix-06072024", original: [], control: [9, 8.5, 9.2],
            summary: makeSummary(verdict: .inconclusive, original: 0, control: 8.9))
        try await store.save(tests: [throttled, unmeasured])
        let (_, app) = try harness(settings: nil, store: store)
        try await app.test(.router) { client in
            let page = try await client.execute(uri: "/tests/\(DemoHistory.personUserID)/5", method: .get).text
            #expect(page.contains("badge-diff"))
            #expect(!page.contains("no sign of differentiation"), "\(page)")
            #expect(page.contains("treats the app&#39;s traffic differently") || page.contains("treats the app's"))
            let french = try await client.execute(
                uri: "/tests/\(DemoHistory.personUserID)/5?lang=fr", method: .get
            ).text
            #expect(!french.contains("aucun signe de différenciation"))
            let missing = try await client.execute(uri: "/tests/\(DemoHistory.personUserID)/6", method: .get).text
            #expect(missing.contains("not measured"), "\(missing)")
            #expect(!missing.contains(">0 Mbit/s<") && !missing.contains(">0.00 Mbit/s<"))
            let history = try await client.execute(uri: "/", method: .get).text
            #expect(history.contains("not measured"))
        }
    }

    @Test("MeasuredMean: no sample is nil, a measured 0 stays 0, a blocked port keeps its 0")
    func measuredMean() {
        #expect(MeasuredMean.value(0, samples: 0, verdict: .inconclusive) == nil)
        #expect(MeasuredMean.value(0, samples: nil, verdict: nil) == nil)
        #expect(MeasuredMean.value(0, samples: 12, verdict: .inconclusive) == 0)
        #expect(MeasuredMean.value(0, samples: 0, verdict: .blocked) == 0)
        #expect(MeasuredMean.value(3.5, samples: 4, verdict: .differentiation) == 3.5)
    }

    @Test("the live chart draws a confirmation run apart: one line per run and a labelled break, in both languages")
    func liveChartBreak() throws {
        let (dashboard, _) = try harness(settings: nil)
        var run = TestRun(
            id: "run-1", test: LaunchableTest(id: "netflix", name: "Netflix", category: "video"), requestedAt: fixedNow)
        // Two runs: each replay's time starts again from 0 in the confirmation run.
        run.samples[.original] = [(0.5, 1), (1, 1.2), (1.5, 1.1), (0.5, 1.3), (1, 1.2)]
        run.samples[.control] = [(0.5, 9), (1, 8), (2, 9.5), (0.5, 9), (1, 9.1)]
        #expect(Dashboard.runsOf(run.samples[.original] ?? []).map(\.count) == [3, 2])
        for language in [Language.english, .french] {
            let info = Self.info("/run/run-1?lang=\(language.rawValue)", dashboard)
            let svg = dashboard.liveChart(run, info: info)
            #expect(svg.components(separatedBy: "class=\"series series-original\" data-series").count - 1 == 2)
            #expect(svg.components(separatedBy: "class=\"series series-control\" data-series").count - 1 == 2)
            #expect(svg.contains("class=\"run-break\""))
            #expect(svg.contains(language == .english ? ">Confirmation run</text>" : ">Test de confirmation</text>"))
            // The legend names each replay once.
            #expect(svg.components(separatedBy: "class=\"legend-label\"").count - 1 == 2)
        }
        // A single run has no break.
        run.samples[.original] = [(0.5, 1), (1, 1.2)]
        run.samples[.control] = [(0.5, 9), (1, 8)]
        let single = dashboard.liveChart(run, info: Self.info("/run/run-1", dashboard))
        #expect(!single.contains("run-break"))
    }

    @Test("the settings page shows every setting and writes only the edited keys, from its own form only")
    func settingsPage() async throws {
        let settings = RecordingSettings()
        let (_, app) = try harness(settings: settings)
        let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        try await app.test(.router) { client in
            let page = try await client.execute(uri: "/settings", method: .get).text
            #expect(page.contains("name=\"value.server\" value=\"wehe4.meddle.mobi\""), "\(page)")
            #expect(page.contains("name=\"shown.p-threshold\" value=\"default\""))
            #expect(page.contains("name=\"token\" value=\"token-0123456789\""))
            #expect(page.contains("help of server"))
            // The navigation links the page when the dashboard has one.
            let history = try await client.execute(uri: "/", method: .get).text
            #expect(history.contains("href=\"/settings?lang=en\""))

            // Another command changes the server while the page is open; the form edits only the p-value threshold.
            await settings.changeElsewhere("server", "127.0.0.1")
            let body =
                "lang=en&token=token-0123456789&value.server=wehe4.meddle.mobi&shown.server=wehe4.meddle.mobi"
                + "&value.p-threshold=0.05&shown.p-threshold=default"
            let saved = try await client.execute(
                uri: "/settings", method: .post, headers: form, body: ByteBuffer(string: body))
            #expect(saved.status == .seeOther)
            #expect(saved.headers[.location]?.hasPrefix("/settings?saved=p-threshold") == true)
            #expect(await settings.values == ["server": "127.0.0.1", "p-threshold": "0.05"])
            #expect(await settings.applied == [["p-threshold=0.05"]])
            let after = try await client.execute(uri: "/settings?saved=p-threshold&lang=en", method: .get).text
            #expect(after.contains("Saved: p-threshold."))

            // A refused value: the reason shown, the submitted value kept in the form, nothing written.
            let bad = "lang=en&token=token-0123456789&value.p-threshold=lots&shown.p-threshold=0.05"
            let refused = try await client.execute(
                uri: "/settings", method: .post, headers: form, body: ByteBuffer(string: bad))
            #expect(refused.status == .badRequest)
            #expect(refused.text.contains("p-threshold must be a fraction"))
            #expect(refused.text.contains("value=\"lots\""))
            #expect(await settings.values["p-threshold"] == "0.05")

            // Without the token, or from another site: refused, nothing applied.
            let noToken = try await client.execute(
                uri: "/settings", method: .post, headers: form,
                body: ByteBuffer(string: "value.p-threshold=0.5&shown.p-threshold=0.05"))
            #expect(noToken.status == .forbidden)
            var foreign = form
            foreign[.origin] = "http://evil.example"
            let crossSite = try await client.execute(
                uri: "/settings", method: .post, headers: foreign,
                body: ByteBuffer(string: "token=token-0123456789&value.p-threshold=0.5&shown.p-threshold=0.05"))
            #expect(crossSite.status == .forbidden)
            #expect(await settings.applied.count == 2)
            #expect(await settings.values["p-threshold"] == "0.05")
        }
    }

    @Test("without a settings editor there is no settings link and the page says it is unavailable")
    func settingsUnavailable() async throws {
        let (_, app) = try harness(settings: nil)
        try await app.test(.router) { client in
            let history = try await client.execute(uri: "/", method: .get).text
            #expect(!history.contains("/settings?lang="))
            let page = try await client.execute(uri: "/settings", method: .get).text
            #expect(page.contains("Settings can only be changed from the dashboard of wehe dashboard."))
        }
    }

    @Test("the form's changes are the keys whose value differs from the value shown")
    func settingChanges() {
        let changes = Dashboard.settingChanges([
            ("value.a", "1"), ("shown.a", "1"), ("value.b", "2"), ("shown.b", "3"), ("value.c", "x"),
        ])
        #expect(changes.map(\.key) == ["b", "c"])
        #expect(
            Dashboard.sameSecret("abc", "abc") && !Dashboard.sameSecret("abc", "abd") && !Dashboard.sameSecret("", ""))
    }

    @Test("operator tables carry the column name on each cell, for the phone layout")
    func operatorCellLabels() async throws {
        let store = InMemoryResultStore()
        _ = try await seedCrowd(store, count: 200)
        let (_, app) = try harness(settings: nil, store: store)
        try await app.test(.router) { client in
            let page = try await client.execute(uri: "/operator/", method: .get).text
            #expect(page.contains("<td class=\"num\" data-label=\"Tests\">"), "\(page.prefix(400))")
            #expect(page.contains("data-label=\"▼ Differentiation\""))
        }
    }
}

@Suite("form posts from the dashboard's own pages")
struct SameOriginFormTests {
    @Test("pages ask browsers for a same-origin referrer policy, so that their form posts carry a real Origin")
    func referrerPolicy() async throws {
        let harness = try Harness()
        try await harness.test { client in
            let page = try await client.execute(uri: "/run", method: .get)
            // Under "no-referrer" a browser sends `Origin: null` with a form post, which checkOrigin refuses.
            #expect(page.headers[HTTPField.Name("referrer-policy")!] == "same-origin")
        }
    }
}
