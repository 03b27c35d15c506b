import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// What a person reads first: headlines that say what was found, bars that can be
/// seen, charts that stay readable, operator pages that say what needs attention.
@Suite("readable pages")
struct ReadabilityTests {
    /// The y coordinates of the path drawn for one series (`series-original`, `series-control`).
    static func pathYs(_ html: String, style: String) throws -> [Double] {
        let marker = "class=\"series series-\(style)\" data-series="
        let end = try #require(html.range(of: marker))
        let start = try #require(html[..<end.lowerBound].range(of: "<path d=\"", options: .backwards))
        let d = html[start.upperBound..<end.lowerBound]
        return d.split(whereSeparator: { $0 == "L" || $0 == "M" }).compactMap { point in
            point.split(separator: " ").dropFirst().first.flatMap { Double($0.filter { $0 != "\"" }) }
        }
    }

    @Test("history mini-bars have a size of their own, so a table cell cannot shrink them to nothing")
    func miniBarsSize() async throws {
        let bars = MiniBars.comparison(original: 1.5, control: 9.5)
        #expect(bars.contains("width=\"96\" height=\"14\""))
        #expect(bars.contains("width=\"15.79\""))
        #expect(bars.contains("width=\"100\""))
        let harness = try Harness()
        _ = try await seedPerson(harness.store, count: 3)
        try await harness.test { client in
            let html = try await client.execute(uri: "/", method: .get).text
            let drawn = html.components(separatedBy: "class=\"mini-bars\"").count - 1
            #expect(drawn == 3)
            #expect(html.components(separatedBy: "width=\"96\" height=\"14\"").count - 1 == 3)
            // The phone layout labels the speeds from the page's words.
            #expect(html.contains("data-label=\"App traffic\""))
        }
    }

    @Test("a test page's headline says what was found, and a bar per replay shows the two average speeds")
    func headlineAndAverages() async throws {
        let harness = try Harness()
        try await harness.store.save(
            test: customTest(
                count: 1, provider: "Orange (cellular)", replay: "Netflix-06072024",
                original: Array(repeating: 1.5, count: 40), control: Array(repeating: 9.5, count: 40),
                summary: makeSummary(verdict: .differentiation, original: 1.5, control: 9.5, p: 1e-9)))
        try await harness.store.save(
            test: customTest(
                count: 2, provider: "Free (Wi-Fi)", replay: "Youtube-02202024",
                original: Array(repeating: 20, count: 40), control: Array(repeating: 20.4, count: 40),
                summary: makeSummary(verdict: .noDifferentiation, original: 20, control: 20.4, p: 0.6)))
        try await harness.test { client in
            let throttled = try await client.execute(uri: "/tests/demo-user/1", method: .get).text
            #expect(throttled.contains("Netflix looks throttled on Orange (cellular)</h1>"))
            #expect(throttled.contains("id=\"average-bars\""))
            #expect(throttled.contains("<span class=\"avg-value\">1.50 Mbit/s</span>"))
            #expect(throttled.contains("<span class=\"avg-value\">9.50 Mbit/s</span>"))
            #expect(throttled.contains("width=\"15.79\" class=\"avg-bar mini-original\""))
            #expect(throttled.contains("width=\"100\" class=\"avg-bar mini-control\""))
            let none = try await client.execute(uri: "/tests/demo-user/2", method: .get).text
            #expect(none.contains("No differentiation found for YouTube on Free (Wi-Fi)</h1>"))
            let french = try await client.execute(uri: "/tests/demo-user/1?lang=fr", method: .get).text
            #expect(french.contains("Netflix semble ralenti chez Orange (cellular)</h1>"))
        }
    }

    @Test("a test with too few measurements says so plainly: headline, badge, explanation and history row")
    func tooFewMeasurements() async throws {
        let reason =
            "too few measurements: the original replay has 2 positive throughput samples, the control replay has 2 positive throughput samples (at least 10 each are needed)"
        var summary = makeSummary(verdict: .inconclusive, original: 0.2, control: 0.2, p: 1)
        summary.note = reason
        #expect(summary.insufficientDataReason == reason)
        let harness = try Harness()
        try await harness.store.save(
            test: customTest(
                count: 1, provider: "Orange (cellular)", replay: "port_853", original: [0.4, 0, 0.2],
                control: [0.4, 0, 0.2], summary: summary))
        try await harness.test { client in
            let html = try await client.execute(uri: "/tests/demo-user/1", method: .get).text
            #expect(html.contains("Too few measurements to judge"))
            #expect(html.contains("on Orange (cellular)</h1>"))
            #expect(html.contains("Inconclusive (too few measurements)</span>"))
            #expect(html.contains("class=\"explanation\">Inconclusive, " + reason + ": the test cannot tell"))
            let history = try await client.execute(uri: "/", method: .get).text
            #expect(history.contains("Inconclusive (too few measurements)</span>"))
            let french = try await client.execute(uri: "/tests/demo-user/1?lang=fr", method: .get).text
            #expect(french.contains("Trop peu de mesures pour juger"))
            #expect(french.contains("Non concluant (trop peu de mesures)</span>"))
        }
        // An inconclusive test for another reason keeps the plain words.
        let other = makeSummary(verdict: .inconclusive, original: 5, control: 9, p: 0.2)
        #expect(VerdictText(summary: other, strings: Strings(.english)).label == "Inconclusive")
        #expect(
            VerdictText.headline(of: other, app: "Netflix", provider: "Orange", strings: Strings(.english))
                == "No clear result for Netflix on Orange")
    }

    @Test(
        "a control that spikes to 40 times the app's speed does not flatten the app's line: the axis is cut, and says so"
    )
    func spikesAreCut() async throws {
        let original = (0..<200).map { 1.0 + Double($0 % 5) * 0.1 }
        var control = (0..<200).map { 1.0 + Double($0 % 7) * 0.05 }
        for index in [20, 90, 160] { control[index] = 48 }
        let chart = ThroughputChart(
            series: [
                ChartSeries(label: "App", style: "original", x: original.indices.map { Double($0) * 0.1 }, y: original),
                ChartSeries(
                    label: "Control", style: "control", x: control.indices.map { Double($0) * 0.1 }, y: control),
            ], text: ChartText(title: "t", description: "d", xLabel: "x", yLabel: "y"),
            formatter: Formatter(language: .english, timeZone: .gmt),
            clipNote: "cut at {cut}: {count} above (max {max})")
        let clip = try #require(chart.clip)
        #expect(clip.above == 3)
        #expect(clip.maximum == 48)
        #expect(clip.cut >= 1.4 && clip.cut <= 3)
        let svg = chart.render(id: "c")
        #expect(svg.contains("id=\"c-clip\">cut at "))
        #expect(svg.contains(": 3 above (max 48.00)"))
        // The app's line spans a good part of the plot's height: about 38 units of 236 (under 2 uncut).
        let ys = try Self.pathYs(svg, style: "original")
        #expect((ys.max() ?? 0) - (ys.min() ?? 0) > 20)

        // A control that is fast all along is the finding itself: never cut.
        let steady = ThroughputChart(
            series: [
                ChartSeries(label: "App", style: "original", x: [0, 1, 2, 3], y: [1, 1.1, 1, 1.2]),
                ChartSeries(label: "Control", style: "control", x: [0, 1, 2, 3], y: [40, 41, 39, 40]),
            ], text: ChartText(title: "t", description: "d", xLabel: "x", yLabel: "y"),
            formatter: Formatter(language: .english, timeZone: .gmt), clipNote: "cut")
        #expect(steady.clip == nil)

        // The test page draws the cut and explains it under the chart.
        let harness = try Harness()
        try await harness.store.save(
            test: customTest(
                count: 1, provider: "Orange (cellular)", replay: "Netflix-06072024", original: original,
                control: control, summary: makeSummary(verdict: .inconclusive, original: 1.2, control: 1.9, p: 0.3)))
        try await harness.test { client in
            let html = try await client.execute(uri: "/tests/demo-user/1", method: .get).text
            #expect(html.contains("id=\"throughput-chart-clip\""))
            #expect(html.contains("class=\"axis-cut\""))
            let cut = Formatter(language: .english, timeZone: .gmt).number(
                clip.cut, digits: clip.cut == clip.cut.rounded() ? 0 : 1)
            #expect(html.contains("The vertical axis is cut at \(cut) Mbit/s so that rare spikes do not flatten"))
            #expect(html.contains("3 measurements above it (up to 48.00 Mbit/s)"))
            let ys = try Self.pathYs(html, style: "original")
            #expect((ys.max() ?? 0) - (ys.min() ?? 0) > 20)
        }
    }

    @Test("count axes have whole-number ticks")
    func integerTicks() {
        for maximum in [1.0, 2, 3, 7, 13, 1_234] {
            let scale = AxisScale(maximum: maximum, count: 4, integers: true)
            #expect(scale.ticks.allSatisfy { $0 == $0.rounded() })
            #expect(scale.decimals == 0)
            #expect(scale.upper >= maximum)
        }
        let day = Date(timeIntervalSince1970: 1_773_532_800)
        let svg = DailyBarChart(
            bars: [.init(day: day, count: 1), .init(day: day.addingTimeInterval(86_400), count: 2)],
            text: ChartText(title: "t", description: "d", xLabel: "Day", yLabel: "Tests"), barLabel: "{count}",
            formatter: Formatter(language: .english, timeZone: .gmt)
        ).render(id: "d")
        #expect(!svg.contains(">0.5<") && !svg.contains(">1.5<"))
        #expect(svg.contains("class=\"tick tick-y\">2<"))
    }

    @Test("operator pages: health first with what needs attention, readable event names, refresh without a script")
    func operatorHealthFirst() async throws {
        let harness = try Harness(health: FixedHealth())
        _ = try await seedCrowd(harness.store, count: 40)
        try await harness.store.append(events: DemoHistory.sessionEvents(now: fixedNow))
        try await harness.store.append(events: [
            SessionEvent(at: fixedNow.addingTimeInterval(-100), kind: .init(rawValue: "some-new_kind"))
        ])
        try await harness.test { client in
            let html = try await client.execute(
                uri: "/operator/?from=2026-02-20&to=2026-03-15", method: .get
            ).text
            let banner = try #require(html.range(of: "id=\"health-summary\""))
            let perDay = try #require(html.range(of: "id=\"per-day\""))
            #expect(banner.lowerBound < perDay.lowerBound)
            #expect(html.contains("<meta http-equiv=\"refresh\" content=\"60\">"))
            #expect(html.contains("<details class=\"attention\">"))
            #expect(html.contains("<strong>Session errors</strong>: 1"))
            #expect(html.contains("Replay timing reports"))
            #expect(html.contains("Some new kind"))
            #expect(!html.contains(">replay-timing<") && !html.contains(">some-new_kind<"))
            #expect(html.contains("<main id=\"main\" class=\"wide\">"))
            // Person pages do not reload themselves.
            let history = try await client.execute(uri: "/", method: .get).text
            #expect(!history.contains("http-equiv=\"refresh\""))
        }
    }
}
