import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import WeheCore
import WeheStore

@testable import WeheWeb

/// A fixed "now" for every test: 2026-03-15 12:00 UTC.
let fixedNow = Date(timeIntervalSince1970: 1_773_576_000)

/// A dashboard over an in-memory store, with both route sets on one router.
struct Harness {
    let store: InMemoryResultStore
    let dashboard: Dashboard
    let app: Application<RouterResponder<BasicRequestContext>>

    init(
        store: InMemoryResultStore = InMemoryResultStore(),
        userID: String? = DemoHistory.personUserID,
        launcher: (any TestLauncher)? = nil,
        localizations: (any LocalizationListing)? = nil,
        health: (any ServerHealthSource)? = nil,
        allowedHosts: Set<String>? = nil,
        operatorToken: String? = nil,
        historyPageSize: Int = 50,
        crowdTestLimit: Int = 250_000
    ) throws {
        self.store = store
        self.dashboard = try Dashboard(
            configuration: DashboardConfiguration(
                store: store, userID: userID, launcher: launcher, catalog: DemoHistory.catalog, health: health,
                localizations: localizations, now: { fixedNow }, historyPageSize: historyPageSize,
                allowedHosts: allowedHosts, crowdTestLimit: crowdTestLimit, operatorToken: operatorToken))
        let router = Router()
        dashboard.addPersonRoutes(to: router)
        dashboard.addOperatorRoutes(to: router)
        self.app = Application(router: router, services: [dashboard.runner])
    }

    /// Runs requests against the router.
    func test<Value: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await app.test(.router, body)
    }
}

/// Seeds a person's history of `count` tests (analysed with the real analyzer).
func seedPerson(_ store: InMemoryResultStore, count: Int = 12) async throws -> [TestRecord] {
    var history = DemoHistory(seed: 3, samplesPerReplay: 60)
    let records = history.personTests(count: count, now: fixedNow.addingTimeInterval(-3_600))
    try await store.save(tests: records)
    return records
}

/// Seeds a crowd of `count` tests with quick verdicts.
func seedCrowd(_ store: InMemoryResultStore, count: Int = 400) async throws -> [TestRecord] {
    var history = DemoHistory(seed: 5, samplesPerReplay: 30, analyse: false)
    let records = history.crowdTests(count: count, now: fixedNow.addingTimeInterval(-600), days: 20)
    try await store.save(tests: records)
    return records
}

extension TestResponse {
    /// The body as text.
    var text: String { String(buffer: body) }
}

/// A test record with chosen names and samples, analysed by the real analyzer.
func customTest(
    user: String = DemoHistory.personUserID, count: Int, provider: String?, replay: String, original: [Double],
    control: [Double], at date: Date = fixedNow.addingTimeInterval(-7_200), summary: AnalysisSummary? = nil
) -> TestRecord {
    let key = TestKey(userID: user, historyCount: count)
    let o = ThroughputSeries(mbps: original, interval: 0.2)
    let c = ThroughputSeries(mbps: control, interval: 0.2)
    return TestRecord(
        key: key, metadata: TestMetadata(replayName: replay, startedAt: date, provider: provider),
        replays: [
            ReplayRecord(key: key.replay(0), replayName: replay, samples: o, receivedAt: date),
            ReplayRecord(key: key.replay(1), replayName: replay + "Random", samples: c, receivedAt: date),
        ],
        analyses: summary.map { [AnalysisRecord(test: key, comparedTestID: 1, summary: $0, analysedAt: date)] } ?? [])
}

/// A summary with given verdict and means.
func makeSummary(
    verdict: Verdict, original: Double, control: Double, p: Double = 0.001, ratio: Double = 1,
    iosRules: Bool = false
) -> AnalysisSummary {
    let top = max(original, control)
    return AnalysisSummary(
        areaTest: top > 0 ? (control - original) / top : 0, ks2RatioTest: ratio, originalMeanMbps: original,
        controlMeanMbps: control, ksStatistic: 0.8, ksPValue: p, verdict: verdict,
        direction: verdict == .differentiation ? (original < control ? .throttled : .prioritized) : nil,
        thresholds: AppliedThresholds(
            area: 0.5, ksPValue: 0.01, ks2Ratio: iosRules ? 0.95 : nil, ruleSet: iosRules ? "ios" : "android"))
}

/// Stores for tests that need no data.
enum WeheStoreFixture {
    static func store() -> InMemoryResultStore { InMemoryResultStore() }
}
