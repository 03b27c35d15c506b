import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// The timeline: verdicts grouped by provider, app and day, "since when" a throttle has been seen, the page in
/// English and French, the printable page, and the JSON endpoint's checks of its input.
@Suite("timeline")
struct TimelineTests {
    static func run(
        _ day: String, _ provider: String, _ app: String, _ mark: TimelineMark, slowdown: Double? = nil,
        sensitive: TimelineMark? = nil, hour: Int = 12
    ) -> TimelineRun {
        let start = Formatter(language: .english, timeZone: TimeZone(identifier: "UTC") ?? .current).parseDay(day)
        return TimelineRun(
            day: day, startedAt: (start ?? fixedNow).addingTimeInterval(Double(hour) * 3_600), provider: provider,
            app: app, published: mark, slowdown: slowdown, sensitive: sensitive,
            sensitiveSlowdown: sensitive == .throttled ? 0.2 : nil)
    }

    static let days = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"]

    @Test("runs group by provider and app, then by day; a day shows its strongest finding and counts every run")
    func grouping() {
        let runs = [
            Self.run("2026-03-02", "Orange", "Netflix", .none, slowdown: 0.01, hour: 9),
            Self.run("2026-03-02", "Orange", "Netflix", .throttled, slowdown: 0.3, hour: 10),
            Self.run("2026-03-02", "Orange", "Netflix", .throttled, slowdown: 0.6, hour: 11),
            Self.run("2026-03-03", "Orange", "Netflix", .inconclusive),
            Self.run("2026-03-01", "Free", "YouTube", .none, sensitive: .throttled),
            Self.run("2026-03-04", "Orange", "YouTube", .none),
            // Outside the period: left out.
            Self.run("2026-02-20", "Orange", "Netflix", .throttled, slowdown: 0.5),
        ]
        let timeline = Timeline(runs: runs.shuffled(), days: Self.days, source: "test")
        #expect(timeline.runs == 6)
        #expect(timeline.from == "2026-03-01" && timeline.to == "2026-03-05")
        #expect(
            timeline.rows.map { "\($0.provider)/\($0.app)" } == ["Free/YouTube", "Orange/Netflix", "Orange/YouTube"])
        let netflix = timeline.rows[1]
        #expect(netflix.runs == 4)
        #expect(netflix.couldNotJudge == 1)
        #expect(netflix.published.map(\.day) == ["2026-03-02", "2026-03-03"])
        let busy = netflix.published[0]
        #expect(busy.mark == .throttled)
        #expect(busy.runs == 3)
        #expect(busy.slowdown == 0.6)
        #expect(busy.counts == ["throttled": 2, "no-differentiation": 1])
        #expect(netflix.published[1].mark == .inconclusive)
        #expect(netflix.sensitive.isEmpty)
        // The sensitive lane exists only where a run had a sensitive verdict.
        let free = timeline.rows[0]
        #expect(free.sensitive.map(\.mark) == [.throttled])
        #expect(free.publishedStretch == nil)
        #expect(free.sensitiveStretch?.since == "2026-03-01")
    }

    @Test("since when: the latest throttled stretch, ended by a judged run, not by one that could not judge")
    func stretches() {
        let ongoing = TimelineStretch.latest([
            ("d1", .throttled), ("d2", .none), ("d3", .throttled), ("d4", .inconclusive), ("d5", .throttled),
        ])
        #expect(ongoing == TimelineStretch(since: "d3", lastSeen: "d5", stopped: nil, runs: 2))
        #expect(ongoing?.current == true)
        let stopped = TimelineStretch.latest([
            ("d1", .throttled), ("d2", .throttled), ("d3", .inconclusive), ("d4", .prioritized), ("d5", .none),
        ])
        #expect(stopped == TimelineStretch(since: "d1", lastSeen: "d2", stopped: "d4", runs: 2))
        #expect(stopped?.current == false)
        #expect(TimelineStretch.latest([("d1", .none), ("d2", .inconclusive), ("d3", .blocked)]) == nil)
        #expect(TimelineStretch.latest([]) == nil)
    }

    @Test("verdicts map to marks: not analysed and inconclusive both could not judge")
    func marks() {
        #expect(TimelineMark(verdict: nil, direction: nil) == .inconclusive)
        #expect(TimelineMark(verdict: .inconclusive, direction: nil) == .inconclusive)
        #expect(TimelineMark(verdict: .differentiation, direction: nil) == .throttled)
        #expect(TimelineMark(verdict: .differentiation, direction: .prioritized) == .prioritized)
        #expect(TimelineMark(verdict: .blocked, direction: nil) == .blocked)
        #expect(!TimelineMark.inconclusive.judged && !TimelineMark.blocked.judged && TimelineMark.none.judged)
    }

    @Test("both languages hold the same timeline words")
    func strings() {
        #expect(Set(Strings.timelineEnglish.keys) == Set(Strings.timelineFrench.keys))
        #expect(Strings.timelineEnglish.values.allSatisfy { !$0.isEmpty })
        #expect(Strings(.french)["timeline_since_heading"] == "Depuis quand")
    }

    /// A history over several days and two providers: Netflix on Orange throttled since 13 March (after a
    /// no-differentiation day and with an inconclusive day in between), YouTube on Free throttled on 10 March then
    /// not any more on 12 March, Spotify on Free never analysed.
    static func seed(_ store: InMemoryResultStore) async throws {
        let day = 86_400.0
        let noon = Date(timeIntervalSince1970: 1_773_576_000)  // 2026-03-15 12:00 UTC
        var tests: [TestRecord] = []
        func add(_ provider: String, _ replay: String, daysAgo: Double, _ summary: AnalysisSummary?) {
            tests.append(
                customTest(
                    count: tests.count + 1, provider: provider, replay: replay, original: [1, 2, 3],
                    control: [4, 5, 6],
                    at: noon.addingTimeInterval(-daysAgo * day), summary: summary))
        }
        add(
            "Orange (cellular)", "Netflix-06012024", daysAgo: 4,
            makeSummary(verdict: .noDifferentiation, original: 9, control: 10))
        add(
            "Orange (cellular)", "Netflix-06012024", daysAgo: 2,
            makeSummary(verdict: .differentiation, original: 3, control: 10))
        add(
            "Orange (cellular)", "Netflix-06012024", daysAgo: 1,
            makeSummary(verdict: .inconclusive, original: 8, control: 10))
        add(
            "Orange (cellular)", "Netflix-06012024", daysAgo: 0,
            makeSummary(verdict: .differentiation, original: 6, control: 10))
        add(
            "Free (Wi-Fi)", "Youtube-06012024", daysAgo: 5,
            makeSummary(verdict: .differentiation, original: 5, control: 10))
        add(
            "Free (Wi-Fi)", "Youtube-06012024", daysAgo: 3,
            makeSummary(verdict: .noDifferentiation, original: 10, control: 10))
        add("Free (Wi-Fi)", "Spotify-06012024", daysAgo: 3, nil)
        // The newest Netflix test also has a sensitive verdict: a second lane.
        tests[3].sensitive = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 0.002, alpha: 0.008, slowdown: 0.18,
            slowdownLower: 0.1, slowdownUpper: 0.25, confidenceLevel: 0.95, originalMeansMbps: [], controlMeansMbps: [])
        try await store.save(tests: tests)
    }

    @Test("the page: legend, since when, a chart per provider and app, in English and French")
    func page() async throws {
        let harness = try Harness()
        try await Self.seed(harness.store)
        try await harness.test { client in
            let response = try await client.execute(uri: "/timeline?from=2026-03-01&to=2026-03-15", method: .get)
            #expect(response.status == .ok)
            let html = response.text
            #expect(html.contains("What the colours and shapes mean"))
            #expect(html.contains("Throttled: slower by 50 % or more"))
            #expect(html.contains("Since when"))
            #expect(html.contains("Throttled since 13 Mar 2026 (2 tests)"))
            #expect(html.contains("Throttled on 10 Mar 2026 (1 test); not throttled on 12 Mar 2026"))
            #expect(html.contains("No throttling seen"))
            // "Since when" lists the throttle that goes on first, then the one that stopped, then the rest.
            let since = try #require(html.components(separatedBy: "<table class=\"since\">").last)
            let order = ["Netflix</th>", "YouTube</th>", "Spotify</th>"].compactMap { since.range(of: $0)?.lowerBound }
            #expect(order.count == 3 && order == order.sorted())
            #expect(html.components(separatedBy: "class=\"timeline-chart lanes-").count - 1 == 3)
            #expect(html.contains("tl-cell tl-inconclusive"))
            #expect(html.contains("<title>13 Mar 2026 · Published verdict: throttled, 70% slower · 1 test</title>"))
            #expect(html.contains("Sensitive verdict: Throttled since 15 Mar 2026 (1 test)"))
            #expect(html.contains("viewBox=\"0 0 1000 58\""))  // two lanes for Netflix on Orange
            #expect(html.contains("tl-cell tl-throttled tl-s4"))  // 70 % slower on 13 March
            #expect(html.contains("7 tests of 3 apps on 2 providers"))
            #expect(html.contains("href=\"/timeline/print?from=2026-03-01&amp;to=2026-03-15&amp;lang=en\""))
            #expect(html.contains("aria-current=\"page\">Timeline</a>"))
            let french = try await client.execute(uri: "/timeline?from=2026-03-01&to=2026-03-15&lang=fr", method: .get)
            #expect(french.text.contains("Depuis quand"))
            #expect(french.text.contains("Bridé depuis le 13 mars 2026 (2 tests)"))
            #expect(french.text.contains("Ce que disent les couleurs et les formes"))
            // The provider filter keeps one provider's rows.
            let orange = try await client.execute(
                uri: "/timeline?from=2026-03-01&to=2026-03-15&provider=Orange%20(cellular)", method: .get)
            #expect(orange.text.components(separatedBy: "class=\"timeline-chart lanes-").count - 1 == 1)
            #expect(orange.text.contains("<option value=\"Free (Wi-Fi)\">"))
        }
    }

    @Test("the page to print: no navigation, the period and provider in the title, a summary, the source and count")
    func printable() async throws {
        let harness = try Harness()
        try await Self.seed(harness.store)
        try await harness.test { client in
            let english = try await client.execute(
                uri: "/timeline/print?from=2026-03-01&to=2026-03-15&provider=Orange%20(cellular)", method: .get)
            #expect(english.status == .ok)
            let html = english.text
            #expect(!html.contains("<nav"))
            #expect(!html.contains("<header"))
            #expect(html.contains("<title>Timeline: Orange (cellular), 1 Mar 2026 – 15 Mar 2026 · Wehe</title>"))
            #expect(html.contains("<h1>Timeline: Orange (cellular), 1 Mar 2026 – 15 Mar 2026</h1>"))
            #expect(html.contains("Throttled at the end of this period: Netflix (Orange (cellular))."))
            #expect(html.contains("Source: the Wehe history on this computer, 4 tests."))
            #expect(html.contains("timeline.css"))
            let french = try await client.execute(
                uri: "/timeline/print?from=2026-03-01&to=2026-03-15&lang=fr", method: .get)
            #expect(french.text.contains("<h1>Chronologie : tous les fournisseurs, 1 mars 2026 – 15 mars 2026</h1>"))
            #expect(french.text.contains("Source : l&#39;historique Wehe de cet ordinateur, 7 tests."))
            #expect(french.text.contains("<html lang=\"fr\">"))
        }
    }

    @Test("the JSON holds the page's data")
    func json() async throws {
        let harness = try Harness()
        try await Self.seed(harness.store)
        try await harness.test { client in
            let response = try await client.execute(
                uri: "/api/timeline?from=2026-03-01&to=2026-03-15&app=Netflix", method: .get)
            #expect(response.status == .ok)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let timeline = try decoder.decode(Timeline.self, from: Data(response.text.utf8))
            #expect(timeline.days.count == 15)
            #expect(timeline.runs == 4)
            #expect(timeline.rows.count == 1)
            #expect(timeline.rows.first?.publishedStretch?.since == "2026-03-13")
            #expect(timeline.rows.first?.publishedStretch?.current == true)
            #expect(timeline.source == "local-history")
            #expect(timeline.truncated == false)
        }
    }

    @Test(
        "bad filters are refused with a clear 400",
        arguments: [
            ("from=2026-13-01", "'from' must be a date"),
            ("to=yesterday", "'to' must be a date"),
            ("from=2026-03-10&to=2026-03-01", "'from' must not be after 'to'"),
            ("from=2024-01-01&to=2026-03-01", "at most 366 days"),
            ("provider=" + String(repeating: "x", count: 200), "'provider' must be a name"),
            ("app=Net%01flix", "'app' must be a name"),
        ])
    func validation(query: String, message: String) async throws {
        let harness = try Harness()
        try await harness.test { client in
            let json = try await client.execute(uri: "/api/timeline?" + query, method: .get)
            #expect(json.status == .badRequest)
            #expect(json.text.contains(message))
            let page = try await client.execute(uri: "/timeline?" + query, method: .get)
            #expect(page.status == .badRequest)
        }
    }

    @Test("a full year is accepted; the default period ends today")
    func periods() async throws {
        let harness = try Harness()
        try await Self.seed(harness.store)
        try await harness.test { client in
            let year = try await client.execute(uri: "/api/timeline?from=2025-03-16&to=2026-03-15", method: .get)
            #expect(year.status == .ok)
            let fallback = try await client.execute(uri: "/api/timeline", method: .get)
            let timeline = try JSONDecoder.iso.decode(Timeline.self, from: Data(fallback.text.utf8))
            #expect(timeline.to == "2026-03-15")
            #expect(timeline.days.count == TimelineQuery.defaultDays)
            #expect(timeline.runs == 7)
        }
    }
}

/// The operator's timeline: the crowd's counts per provider, app and day, nothing about any one test or user.
@Suite("timeline: the crowd on the operator pages")
struct CrowdTimelineTests {
    @Test("cells coloured by the day's share of differentiation; no since-when; no user ids; French; filters checked")
    func crowd() async throws {
        let harness = try Harness()
        let noon = Date(timeIntervalSince1970: 1_773_576_000)  // 2026-03-15 12:00 UTC
        var tests: [TestRecord] = []
        // 13 March: 3 of 4 Netflix tests on Orange found differentiation (75 %); 14 March: none of 2; 15 March:
        // one test that could not judge. Each test by another user.
        let days: [(Double, Verdict?)] = [
            (2, .differentiation), (2, .differentiation), (2, .differentiation), (2, .noDifferentiation),
            (1, .noDifferentiation), (1, .noDifferentiation), (0, nil),
        ]
        for (index, (age, verdict)) in days.enumerated() {
            tests.append(
                customTest(
                    user: "crowd-user-\(index)", count: 1, provider: "Orange (cellular)", replay: "Netflix-06012024",
                    original: [1, 2, 3], control: [4, 5, 6], at: noon.addingTimeInterval(-age * 86_400),
                    summary: verdict.map { makeSummary(verdict: $0, original: 3, control: 10) }))
        }
        try await harness.store.save(tests: tests)
        try await harness.test { client in
            let page = try await client.execute(uri: "/operator/timeline?from=2026-03-01&to=2026-03-15", method: .get)
            #expect(page.status == .ok)
            let html = page.text
            #expect(html.contains("Providers over time, from the crowd"))
            #expect(html.contains("Differentiation in 50 % or more of the day&#39;s tests"))
            #expect(!html.contains("Since when"))
            #expect(html.contains("tl-cell tl-throttled tl-s4"))  // 75 % on 13 March
            #expect(html.contains("tl-cell tl-no-differentiation"))
            #expect(html.contains("tl-cell tl-inconclusive"))
            #expect(html.contains("7 tests, 1 could not judge"))
            #expect(html.contains("aria-current=\"page\">Timeline</a>"))
            #expect(!html.contains("crowd-user"))
            let json = try await client.execute(
                uri: "/operator/timeline.json?from=2026-03-01&to=2026-03-15", method: .get)
            #expect(json.status == .ok)
            #expect(!json.text.contains("crowd-user"))
            let timeline = try JSONDecoder.iso.decode(Timeline.self, from: Data(json.text.utf8))
            #expect(timeline.runs == 7)
            #expect(timeline.source == "server-store")
            let row = try #require(timeline.rows.first)
            #expect(row.published.map(\.day) == ["2026-03-13", "2026-03-14", "2026-03-15"])
            #expect(row.published.first?.share == 0.75)
            #expect(row.published.first?.counts == ["differentiation": 3, "no-differentiation": 1])
            #expect(row.publishedStretch == nil)
            let french = try await client.execute(
                uri: "/operator/timeline/print?from=2026-03-01&to=2026-03-15&lang=fr", method: .get)
            #expect(french.text.contains("Les fournisseurs au fil du temps") == false)  // the print page: title only
            #expect(french.text.contains("<h1>Chronologie : tous les fournisseurs, 1 mars 2026 – 15 mars 2026</h1>"))
            #expect(french.text.contains("Source : les tests enregistrés par ce serveur, 7 tests."))
            let bad = try await client.execute(uri: "/operator/timeline.json?from=2020-01-01", method: .get)
            #expect(bad.status == .badRequest)
        }
    }
}

extension JSONDecoder {
    /// A decoder of ISO 8601 dates.
    fileprivate static var iso: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
