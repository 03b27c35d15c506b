import Foundation
import Testing
import WeheCore

@testable import WeheWeb

@Suite("rendering pieces")
struct RenderingTests {
    @Test("SVG escapes text and attribute values")
    func svgEscaping() {
        #expect(SVG.escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        var svg = SVG()
        svg.element("text", ["data-x": "\"><script>"], text: "<script>alert(1)</script>")
        #expect(
            svg.rendered == "<text data-x=\"&quot;&gt;&lt;script&gt;\">&lt;script&gt;alert(1)&lt;/script&gt;</text>")
    }

    @Test("chart labels from the store are escaped inside the SVG")
    func chartEscaping() {
        let chart = ThroughputChart(
            series: [ChartSeries(label: "<b>evil</b>", style: "original", x: [1, 2], y: [3, 4])],
            text: ChartText(title: "t<", description: "d&", xLabel: "x\"", yLabel: "y'"),
            formatter: Formatter(language: .english, timeZone: .gmt))
        let svg = chart.render(id: "c")
        #expect(svg.contains("&lt;b&gt;evil&lt;/b&gt;"))
        #expect(!svg.contains("<b>"))
        #expect(svg.contains("<title id=\"c-title\">t&lt;</title>"))
    }

    @Test("axis scales end on round numbers above the data")
    func axisScale() {
        let scale = AxisScale(maximum: 9.3, count: 5)
        #expect(scale.ticks == [0, 2, 4, 6, 8, 10])
        #expect(scale.upper == 10)
        let small = AxisScale(maximum: 0.37, count: 4)
        #expect(small.upper == 0.4)
        #expect(small.decimals == 1)
        let empty = AxisScale(maximum: 0)
        #expect(empty.upper == 1)
        #expect(AxisScale(maximum: .nan).upper == 1)
        #expect(scale.position(5, from: 0, to: 100) == 50)
        #expect(scale.position(50, from: 0, to: 100) == 100)
    }

    @Test("the CDF gap is the two-sample KS statistic (spec vectors)")
    func ksGap() throws {
        let cases: [([Double], [Double], Double)] = [
            ([1, 2, 3], [4, 5, 6], 1),
            ([1, 2, 3, 4], [2.5, 5, 6], 2.0 / 3.0),
            ([1, 1, 2, 2, 3], [1, 2, 2, 3, 3, 3], 0.3),
            (Array(stride(from: 1.0, through: 10, by: 1)), Array(stride(from: 3.5, through: 12.5, by: 1)), 0.3),
        ]
        for (a, b, d) in cases {
            let gap = try #require(DistributionChart.gap(sortedOriginal: a.sorted(), sortedControl: b.sorted()))
            #expect(abs(gap.distance - d) < 1e-12)
        }
        #expect(DistributionChart.gap(sortedOriginal: [], sortedControl: [1]) == nil)
    }

    @Test("long series are reduced per pixel column, keeping the extremes")
    func reduction() {
        let x = (0..<10_000).map(Double.init)
        let y: [Double] = x.map { $0 == 5_000 ? 100 : 1 }
        let points = ThroughputChart.reduced(
            ChartSeries(label: "s", style: "original", x: x, y: y), scale: AxisScale(maximum: 10_000), columns: 600)
        #expect(points.count <= 1_300)
        #expect(points.contains { $0.1 == 100 })
    }

    @Test("Accept-Language negotiation honours quality values and region tags")
    func negotiation() {
        #expect(Language.negotiate(query: nil, acceptLanguage: "fr-FR,fr;q=0.9", fallback: .english) == .french)
        #expect(Language.negotiate(query: nil, acceptLanguage: "de,fr;q=0.4,en;q=0.8", fallback: .french) == .english)
        #expect(Language.negotiate(query: nil, acceptLanguage: "fr;q=0", fallback: .english) == .english)
        #expect(Language.negotiate(query: "fr", acceptLanguage: "en", fallback: .english) == .french)
        #expect(Language.negotiate(query: "zz", acceptLanguage: ";;;,q=x", fallback: .french) == .french)
        #expect(Language.match("EN_gb") == .english)
    }

    @Test("both languages have the same keys and no empty text")
    func stringTables() {
        #expect(Set(Strings.english.keys) == Set(Strings.french.keys))
        #expect(Strings.english.values.allSatisfy { !$0.isEmpty })
        #expect(Strings.french.values.allSatisfy { !$0.isEmpty })
    }

    @Test("numbers and dates follow the language; day parsing is strict")
    func formatting() throws {
        let english = Formatter(language: .english, timeZone: .gmt)
        let french = Formatter(language: .french, timeZone: .gmt)
        #expect(english.number(3.14159) == "3.14")
        #expect(french.number(3.14159) == "3,14")
        #expect(english.integer(1_234_567) == "1,234,567")
        #expect(french.integer(-1_234) == "-1\u{202F}234")
        #expect(english.percent(0.426) == "43%")
        #expect(english.pValue(3.2e-12) == "3.2e-12")
        #expect(english.pValue(0.0123) == "0.0123")
        #expect(english.number(.nan) == "–")
        #expect(english.dateTime(fixedNow) == "15 Mar 2026, 12:00")
        #expect(french.date(fixedNow) == "15 mars 2026")
        let day = try #require(english.parseDay("2026-03-15"))
        #expect(english.isoDay(day) == "2026-03-15")
        for bad in ["2026-3-15", "2026-02-30", "20260315", "2026-03-15T00", "١٢٣٤-03-15", "0000-01-01", ""] {
            #expect(english.parseDay(bad) == nil, "\(bad)")
        }
    }

    @Test("CSV quotes separators and defuses spreadsheet formulas")
    func csv() {
        let table = CSVTable(
            header: ["name", "count", "value"],
            rows: [
                [.text("a,b"), .integer(3), .number(1.5)],
                [.text("=HYPERLINK(\"x\")"), .integer(-1), .number(nil)],
                [.text("plain"), .integer(0), .number(.infinity)],
            ])
        #expect(table.rendered == "name,count,value\r\n\"a,b\",3,1.5\r\n\"'=HYPERLINK(\"\"x\"\")\",-1,\r\nplain,0,\r\n")
    }

    @Test("app names come from the catalog, else from the replay name")
    func appNames() {
        let names = AppNames(catalog: DemoHistory.catalog)
        #expect(names.displayName(ofReplay: "Youtube-02202024") == "YouTube")
        #expect(names.displayName(ofReplay: "Youtube_02202024") == "YouTube")
        #expect(names.displayName(ofReplay: "Vimeo-02272024") == "Vimeo")
        #expect(AppNames(catalog: nil).displayName(ofReplay: "port_853") == "Port 853 (small)")
        #expect(AppNames(catalog: nil).displayName(ofReplay: "port_853_large") == "Port 853 (large)")
        #expect(AppNames.initial(of: "  +1 app") == "1")
        #expect(AppNames.initial(of: "--") == "?")
    }

    @Test("configuration values out of range are refused")
    func configuration() async throws {
        let store = WeheStoreFixture.store()
        for bad in [
            DashboardConfiguration(store: store, personPath: "nope"),
            DashboardConfiguration(store: store, operatorPath: "/a b"),
            DashboardConfiguration(store: store, historyPageSize: 0),
            DashboardConfiguration(store: store, crowdCacheSeconds: -1),
        ] {
            #expect(throws: WeheWebError(.invalidConfiguration, "")) { try Dashboard(configuration: bad) }
        }
        let fine = try Dashboard(
            configuration: DashboardConfiguration(store: store, personPath: "/me/", operatorPath: "/ops"))
        #expect(fine.configuration.personPath == "/me")
    }
}
