package import Foundation
import WeheAnalysis
package import WeheCore
import WeheStatistics
package import WeheStore

/// A realistic, reproducible history for the dashboard demo, the browser check and the benchmark: a person's own
/// tests (some apps throttled by their cellular provider) and a server's crowd of tests (providers that cap some
/// video apps at a fixed rate, which the crowd analysis should find).
package struct DemoHistory: Sendable {
    /// An app the demo tests.
    package struct App: Sendable, Hashable {
        /// Original replay name as stored.
        package var replay: String
        /// Display name.
        package var name: String
        /// Catalog id.
        package var id: String
        /// Category.
        package var category: AppCategory
        /// Nominal duration of one replay, seconds.
        package var seconds: Double
        /// Whether this is a port test.
        package var isPort: Bool
    }

    /// A provider of the demo and the apps it caps (replay → Mbit/s).
    package struct Provider: Sendable, Hashable {
        /// Name as stored.
        package var name: String
        /// Typical capacity, Mbit/s.
        package var capacity: Double
        /// Capped apps and their rates.
        package var caps: [String: Double]
        /// Blocked port replays.
        package var blocked: Set<String>
        /// Relative share of tests.
        package var weight: Double
    }

    /// The user id of the person's history.
    package static let personUserID = "demo-user"

    /// The demo's apps.
    package static let apps: [App] = [
        App(replay: "Youtube-02202024", name: "YouTube", id: "youtube", category: .video, seconds: 39, isPort: false),
        App(replay: "Netflix-06072024", name: "Netflix", id: "netflix", category: .video, seconds: 8, isPort: false),
        App(
            replay: "DisneyPlus-05022024", name: "Disney+", id: "disneyplus", category: .video, seconds: 20,
            isPort: false),
        App(replay: "Twitch-04292024", name: "Twitch", id: "twitch", category: .video, seconds: 25, isPort: false),
        App(replay: "Spotify-06102024", name: "Spotify", id: "spotify", category: .music, seconds: 6, isPort: false),
        App(replay: "Deezer-09012019", name: "Deezer", id: "deezer", category: .music, seconds: 10, isPort: false),
        App(replay: "Zoom-05062024", name: "Zoom", id: "zoom", category: .conferencing, seconds: 23, isPort: false),
        App(replay: "Skype-06172024", name: "Skype", id: "skype", category: .conferencing, seconds: 20, isPort: false),
        App(
            replay: "port_6881", name: "Port 6881 (BitTorrent)", id: "port6881s", category: .smallPort, seconds: 2,
            isPort: true),
        App(
            replay: "port_853", name: "Port 853 (DNS over TLS)", id: "port853s", category: .smallPort, seconds: 2,
            isPort: true),
    ]

    /// The demo's providers.
    package static let providers: [Provider] = [
        Provider(
            name: "T-Mobile (cellular)", capacity: 38,
            caps: [
                "Youtube-02202024": 1.5, "Netflix-06072024": 1.5, "DisneyPlus-05022024": 1.5, "Twitch-04292024": 1.5,
            ],
            blocked: [], weight: 3),
        Provider(
            name: "Verizon (cellular)", capacity: 45, caps: ["Youtube-02202024": 2.0, "Netflix-06072024": 2.0],
            blocked: [], weight: 3),
        Provider(name: "AT&T (cellular)", capacity: 30, caps: ["Netflix-06072024": 1.6], blocked: [], weight: 2),
        Provider(name: "Comcast", capacity: 120, caps: [:], blocked: [], weight: 2),
        Provider(
            name: "Orange (cellular)", capacity: 25, caps: ["Netflix-06072024": 1.2], blocked: ["port_6881"],
            weight: 1.5
        ),
        Provider(name: "Free (Wi-Fi)", capacity: 90, caps: [:], blocked: [], weight: 1.5),
        Provider(name: "SFR (cellular)", capacity: 22, caps: [:], blocked: ["port_6881"], weight: 1),
        Provider(name: "Vodafone (cellular)", capacity: 28, caps: [:], blocked: [], weight: 1),
    ]

    /// A catalog naming the demo apps.
    package static var catalog: AppCatalog {
        AppCatalog(
            entries: apps.map { app in
                CatalogEntry(
                    id: app.id, name: app.name, image: app.id, category: app.category, durationSeconds: app.seconds,
                    sizeMB: nil,
                    originalFile: app.replay.replacingOccurrences(of: "-", with: "_") + ".pcap_client_all.json",
                    controlFile: nil)
            }, port443Small: nil, port443Large: nil)
    }

    /// Samples per replay.
    package var samplesPerReplay: Int
    /// Whether verdicts come from the real analyzer (slow) or from a quick rule on the means (for millions).
    package var analyse: Bool
    private var generator: SeededGenerator

    /// Creates a generator.
    package init(seed: UInt64, samplesPerReplay: Int = 100, analyse: Bool = true) {
        self.generator = SeededGenerator(seed: seed)
        self.samplesPerReplay = max(2, samplesPerReplay)
        self.analyse = analyse
    }

    private mutating func uniform() -> Double {
        Double(generator.next() >> 11) / Double(1 << 53)
    }

    private mutating func pick<T>(_ items: [T], weights: [Double]) -> T {
        let total = weights.reduce(0, +)
        var target = uniform() * total
        for (item, weight) in zip(items, weights) {
            target -= weight
            if target <= 0 { return item }
        }
        return items[items.count - 1]
    }

    /// The person's history: `count` tests over the last `days` days on two providers, newest last.
    package mutating func personTests(count: Int, now: Date, days: Int = 60) -> [TestRecord] {
        let mine = Self.providers.filter { $0.name == "Orange (cellular)" || $0.name == "Free (Wi-Fi)" }
        var records: [TestRecord] = []
        for index in 0..<max(0, count) {
            let age = Double(count - index) / Double(max(1, count)) * Double(days) * 86_400
            let started = now.addingTimeInterval(-age + uniform() * 3_600)
            let provider = mine[index % mine.count]
            let app = Self.apps[(index * 7 + index / 3) % Self.apps.count]
            records.append(
                test(
                    key: TestKey(userID: Self.personUserID, historyCount: index + 1), provider: provider, app: app,
                    startedAt: started))
        }
        return records
    }

    /// Two tests that the charts and the headline must cope with, numbered from `firstHistoryCount`: a Netflix
    /// test on Orange whose control spikes to 40 times the app's speed in a few samples (the line chart cuts its
    /// axis), and a port test that measured only three samples per replay (inconclusive, too few measurements).
    package mutating func edgeCaseTests(firstHistoryCount: Int, now: Date) -> [TestRecord] {
        guard let orange = Self.providers.first(where: { $0.name == "Orange (cellular)" }),
            let netflix = Self.apps.first(where: { $0.id == "netflix" }),
            let port = Self.apps.first(where: { $0.id == "port853s" })
        else { return [] }
        var spiky = test(
            key: TestKey(userID: Self.personUserID, historyCount: firstHistoryCount), provider: orange, app: netflix,
            startedAt: now.addingTimeInterval(-1_800))
        if let control = spiky.replays.firstIndex(where: { $0.key.testID == 1 }),
            let original = spiky.replay(0)?.samples
        {
            var mbps = original.mbps
            let peak = (original.meanMbps ?? 1) * 40
            for index in stride(from: 7, to: mbps.count, by: 40) { mbps[index] = peak }
            let series = ThroughputSeries(mbps: mbps, times: original.times)
            spiky.replays[control].samples = series
            spiky.analyses = [
                AnalysisRecord(
                    test: spiky.key, comparedTestID: 1,
                    summary: summarize(original: original, control: series, seed: generator.next()),
                    analysedAt: now.addingTimeInterval(-1_700))
            ]
        }
        // An interleaved test: its sensitive verdict beside the published one, in the history list too.
        spiky.sensitive = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 0.001953125, alpha: 0.008,
            slowdown: 0.42, slowdownLower: 0.37, slowdownUpper: 0.47, confidenceLevel: 0.95, originalMeansMbps: [],
            controlMeansMbps: [])
        var few = test(
            key: TestKey(userID: Self.personUserID, historyCount: firstHistoryCount + 1), provider: orange, app: port,
            startedAt: now.addingTimeInterval(-600))
        let short = ThroughputSeries(mbps: [0.4, 0, 0.2], interval: 0.1)
        for index in few.replays.indices { few.replays[index].samples = short }
        if let analyzer = try? DifferentiationAnalyzer(),
            let summary = try? analyzer.analyze(original: short, control: short, seed: generator.next())
        {
            few.analyses = [
                AnalysisRecord(
                    test: few.key, comparedTestID: 1, summary: summary, analysedAt: now.addingTimeInterval(-500))
            ]
        }
        return [spiky, few]
    }

    /// A server's tests: `count` tests of many users spread over `days` days before `now`.
    package mutating func crowdTests(count: Int, now: Date, days: Int = 60, firstUser: Int = 0) -> [TestRecord] {
        var records: [TestRecord] = []
        records.reserveCapacity(max(0, count))
        let weights = Self.providers.map(\.weight)
        for index in 0..<max(0, count) {
            let provider = pick(Self.providers, weights: weights)
            // Video apps are tested more often, as in the published data.
            let app = pick(Self.apps, weights: Self.apps.map { $0.category == .video ? 3 : ($0.isPort ? 0.6 : 1) })
            let started = now.addingTimeInterval(-uniform() * Double(days) * 86_400)
            let user = firstUser + index / 3
            records.append(
                test(
                    key: TestKey(userID: "user-\(user)", historyCount: index % 3 + 1), provider: provider, app: app,
                    startedAt: started))
        }
        return records
    }

    /// One test of `app` on `provider`.
    package mutating func test(key: TestKey, provider: Provider, app: App, startedAt: Date) -> TestRecord {
        let capacity = provider.capacity * (0.35 + 0.9 * uniform())
        let cap = provider.caps[app.replay].flatMap { uniform() < 0.85 ? $0 : nil }
        let blocked = provider.blocked.contains(app.replay)
        let interval = app.seconds / Double(samplesPerReplay)
        var control: [Double] = []
        var original: [Double] = []
        for _ in 0..<samplesPerReplay {
            let dip = uniform() < 0.05 ? 0.3 : 1
            control.append(max(0, capacity * (0.7 + 0.5 * uniform()) * dip))
            let base = cap.map { $0 * (0.9 + 0.2 * uniform()) } ?? capacity * (0.7 + 0.5 * uniform()) * dip
            original.append(blocked ? 0 : max(0, base))
        }
        let originalSeries = ThroughputSeries(mbps: original, interval: interval)
        let controlSeries = ThroughputSeries(mbps: control, interval: interval)
        let summary =
            blocked
            ? blockedSummary(control: controlSeries)
            : summarize(original: originalSeries, control: controlSeries, seed: generator.next())
        let metadata = TestMetadata(
            replayName: app.replay, startedAt: startedAt, provider: provider.name,
            networkType: provider.name.contains("cellular") ? "LTE" : "WIFI", clientVersion: "wehe-swift 0.1",
            serverName: "replay-1.example.net")
        let received = startedAt.addingTimeInterval(app.seconds * 2 + 5)
        return TestRecord(
            key: key, metadata: metadata,
            replays: [
                ReplayRecord(key: key.replay(0), replayName: app.replay, samples: originalSeries, receivedAt: received),
                ReplayRecord(
                    key: key.replay(1), replayName: app.replay.replacingOccurrences(of: "-", with: "Random-"),
                    samples: controlSeries, receivedAt: received),
            ],
            analyses: [AnalysisRecord(test: key, comparedTestID: 1, summary: summary, analysedAt: received)])
    }

    private func blockedSummary(control: ThroughputSeries) -> AnalysisSummary {
        (try? DifferentiationAnalyzer())?.portBlockedSummary(controlMeanMbps: control.meanMbps ?? 0)
            ?? quickSummary(originalMean: 0, controlMean: control.meanMbps ?? 0)
    }

    private func summarize(original: ThroughputSeries, control: ThroughputSeries, seed: UInt64) -> AnalysisSummary {
        if analyse, let analyzer = try? DifferentiationAnalyzer(),
            let summary = try? analyzer.analyze(original: original, control: control, seed: seed)
        {
            return summary
        }
        return quickSummary(originalMean: original.meanMbps ?? 0, controlMean: control.meanMbps ?? 0)
    }

    /// The verdict rule applied to the means only, with representative statistics (for large synthetic stores).
    private func quickSummary(originalMean: Double, controlMean: Double) -> AnalysisSummary {
        let top = max(originalMean, controlMean)
        let area = top > 0 ? (controlMean - originalMean) / top : 0
        let threshold = top > 10 ? 0.3 : 0.5
        let differs = abs(area) >= threshold
        return AnalysisSummary(
            areaTest: area, ks2RatioTest: differs ? 1 : 0.2, originalMeanMbps: originalMean,
            controlMeanMbps: controlMean,
            ksStatistic: differs ? 0.9 : 0.1, ksPValue: differs ? 1e-9 : 0.5,
            verdict: differs ? .differentiation : .noDifferentiation,
            direction: differs ? (area > 0 ? .throttled : .prioritized) : nil,
            thresholds: AppliedThresholds(area: threshold, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android"))
    }

    /// WeHeY runs for the operator page.
    package static func localizationRuns(now: Date) -> [LocalizationRun] {
        let verdicts: [LocalizationVerdict?] = [.accessNetwork, .noEvidence, .accessNetwork, .inconclusive, nil]
        return verdicts.enumerated().map { index, verdict in
            LocalizationRun(
                userID: "user-\(900 + index)", historyCounts: [10 + index, 11 + index],
                servers: ["mlab-lga03", "mlab-ord05"],
                replayName: index % 2 == 0 ? "Netflix-06072024" : "Youtube-02202024",
                singleServer: "mlab-lga03", singleHistoryCount: 9 + index,
                requestedAt: now.addingTimeInterval(-Double(index) * 86_400 * 3 - 4_000),
                summary: verdict.map { verdict in
                    LocalizationSummary(
                        mwuStatistic: 410, mwuPValue: verdict == .accessNetwork ? 0.0021 : 0.31,
                        simultaneousMeansMbps: [1.4, 1.5], sumMeanMbps: 2.9, singleMeanMbps: 1.5,
                        intervalSizes: [0.5, 1], correlationPValues: [0.01, 0.02], averageLoss: [0.021, 0.018],
                        verdict: verdict)
                })
        }
    }

    /// Finished DPI searches: test 2 of the person (Skype) found the SNI of a TLS ClientHello, another user's
    /// search on another provider found an HTTP Host header, and one search found no content rule.
    package static func dpiResults(now: Date) -> [DPIResultRecord] {
        func hello(_ name: String) -> (payload: [UInt8], range: Range<Int>) {
            var payload: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]
            payload += (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            payload += [0x00, 0x00, 0x08, 0x13, 0x01, 0x13, 0x02, 0xc0, 0x2b, 0xc0, 0x2f, 0x01, 0x00, 0x00, 0x40]
            payload += [0x00, 0x00, 0x00, UInt8(name.utf8.count + 5), 0x00, UInt8(name.utf8.count + 3), 0x00, 0x00]
            payload += [UInt8(name.utf8.count)]
            let start = payload.count
            payload += Array(name.utf8)
            payload += [0x00, 0x17, 0x00, 0x00, 0xff, 0x01, 0x00, 0x01, 0x00]
            return (payload, start..<(start + name.utf8.count))
        }
        let sni = hello("edge.skype.com")
        let http = Array("GET /range/0-999999 HTTP/1.1\r\nHost: ipv4-c001-lax009-ix.1.oca.nflxvideo.net\r\n\r\n".utf8)
        let host = 35..<(35 + "ipv4-c001-lax009-ix.1.oca.nflxvideo.net".utf8.count)
        func rule(_ payload: [UInt8], _ range: Range<Int>) -> DPIFoundRule {
            DPIFoundRule(
                packet: "C_1", left: range.lowerBound, right: range.upperBound, content: Array(payload[range]),
                matchingBytes: Array(range), packetPayload: payload)
        }
        return [
            DPIResultRecord(
                id: DPISearchID(
                    userID: personUserID, carrierName: "Free (Wi-Fi)", replayName: "Skype-06172024"),
                historyCount: 2, startedAt: now.addingTimeInterval(-7_200), finishedAt: now.addingTimeInterval(-3_600),
                probes: 34, bytesUsed: 61_200_000, outcome: "rule", message: "rule",
                rules: [rule(sni.payload, sni.range)]),
            DPIResultRecord(
                id: DPISearchID(userID: "user-950", carrierName: "Verizon (cellular)", replayName: "Netflix-06072024"),
                historyCount: 4, startedAt: now.addingTimeInterval(-90_000),
                finishedAt: now.addingTimeInterval(-86_400),
                probes: 41, bytesUsed: 98_000_000, outcome: "rule", message: "rule", rules: [rule(http, host)]),
            DPIResultRecord(
                id: DPISearchID(userID: "user-951", carrierName: "Comcast", replayName: "Twitch-04292024"),
                historyCount: 7, startedAt: now.addingTimeInterval(-200_000),
                finishedAt: now.addingTimeInterval(-190_000),
                probes: 10, bytesUsed: 20_000_000, outcome: "noDPIInFirstPackets", message: "NO DPI for first 10 pacs",
                rules: []),
        ]
    }

    /// Session-log entries for the health panel.
    package static func sessionEvents(now: Date) -> [SessionEvent] {
        var events: [SessionEvent] = []
        for index in 0..<40 {
            events.append(SessionEvent(at: now.addingTimeInterval(-Double(index) * 3_000), kind: .admissionGranted))
            events.append(SessionEvent(at: now.addingTimeInterval(-Double(index) * 3_000 + 60), kind: .replayCompleted))
        }
        events.append(SessionEvent(at: now.addingTimeInterval(-7_200), kind: .admissionDenied, detail: "0;2;100"))
        events.append(
            SessionEvent(at: now.addingTimeInterval(-5_000), kind: .error, detail: "side channel closed early"))
        events.append(
            SessionEvent(at: now.addingTimeInterval(-4_000), kind: .init(rawValue: "replay-timing"), detail: "0.4"))
        return events
    }
}
