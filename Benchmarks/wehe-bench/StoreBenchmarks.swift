import Foundation
import Logging
import PostgresKit
import WeheCore
import WeheStore
import WeheStoreSQL

/// Result-store benchmarks, for SQLite and (when `postgresURL` is given) PostgreSQL:
/// - acknowledged replay writes per second (`save(replay:metadata:)`, one transaction each, 100 samples), one
///   writer and 8 concurrent writers;
/// - seeding one million tests with batched multi-row inserts (`save(tests:)`);
/// - the provider × app × verdict count over those tests (the dashboard query);
/// - the time to stream the million tests, group by group (10 providers × 10 replays), through `consume`, the
///   stand-in for the crowd-sourced analysis.
///
/// `WEHE_BENCH_STORE_TESTS` (default 1 000 000) and `WEHE_BENCH_STORE_SAMPLES` (samples per replay, default 100)
/// change the sizes. PostgreSQL runs in a scratch database created next to the one `postgresURL` names and
/// dropped afterwards. Call it from `main.swift` as `await runStoreBenchmarks(postgresURL: url)`; pass `consume` to
/// feed the streamed tests (group after group, in start-time order) into the real crowd-sourced analysis.
func runStoreBenchmarks(postgresURL: String?, consume: ((CrowdTestRecord) -> Void)? = nil) async {
    let environment = ProcessInfo.processInfo.environment
    let total = environment["WEHE_BENCH_STORE_TESTS"].flatMap(Int.init) ?? 1_000_000
    let samples = environment["WEHE_BENCH_STORE_SAMPLES"].flatMap(Int.init) ?? 100
    var logger = Logger(label: "wehe-bench.store")
    logger.logLevel = .warning
    print("store: \(total) tests, \(samples) samples per replay")

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wehe-bench-\(UUID().uuidString)")
        .path
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = SQLiteOptions(path: directory + "/bench.sqlite")
        try await StoreBenchmark(name: "sqlite", logger: logger, samples: samples, total: total, consume: consume).run {
            SQLStoreConfiguration(backend: .sqlite(sqlite))
        }
        var normal = SQLiteOptions(path: directory + "/normal.sqlite")
        normal.synchronous = .normal
        try await StoreBenchmark(
            name: "sqlite synchronous=NORMAL", logger: logger, samples: samples, total: 0, consume: nil
        )
        .run { SQLStoreConfiguration(backend: .sqlite(normal)) }
    } catch {
        print("store: sqlite benchmark failed: \(error)")
    }

    guard let postgresURL else {
        print("store: postgresql skipped (no URL given)")
        return
    }
    let scratch = "wehe_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
    do {
        try await StoreBenchmark.adminSQL(postgresURL, "CREATE DATABASE \(scratch)")
        var components = URLComponents(string: postgresURL)
        components?.path = "/\(scratch)"
        let url = components?.string ?? postgresURL
        do {
            try await StoreBenchmark(
                name: "postgresql", logger: logger, samples: samples, total: total, consume: consume
            ).run {
                SQLStoreConfiguration(backend: .postgres(PostgresOptions(url: url, maximumConnections: 8)))
            }
        } catch {
            print("store: postgresql benchmark failed: \(error)")
        }
        try await StoreBenchmark.adminSQL(postgresURL, "DROP DATABASE \(scratch) WITH (FORCE)")
    } catch {
        print("store: postgresql scratch database: \(error)")
    }
}

/// One run of the store benchmarks against one backend.
struct StoreBenchmark {
    static let providers = (0..<10).map { "Provider \($0) (cellular)" }
    static let replays = (0..<10).map { "App\($0)-05132024" }

    let name: String
    let logger: Logger
    let samples: Int
    let total: Int
    let consume: ((CrowdTestRecord) -> Void)?

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    func report(_ what: String, _ value: String) {
        print("store[\(name)]: \(what): \(value)")
    }

    func series(seed: Int, mean: Double) -> ThroughputSeries {
        Self.series(seed: seed, mean: mean, samples: samples)
    }

    static func series(seed: Int, mean: Double, samples: Int) -> ThroughputSeries {
        var state = UInt64(truncatingIfNeeded: seed) &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let mbps = (0..<samples).map { _ -> Double in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return max(0, mean + Double(Int64(bitPattern: state >> 11) % 1_000) / 500)
        }
        return ThroughputSeries(mbps: mbps, interval: 0.12)
    }

    func run(_ configuration: () -> SQLStoreConfiguration) async throws {
        let store = try await SQLResultStore.open(configuration: configuration(), logger: logger)
        try await writes(store)
        if total > 0 {
            try await seed(store)
            try await counts(store)
            try await stream(store)
        }
        await store.close()
    }

    static func replayWrite(user: String, index: Int, samples: Int) -> (ReplayRecord, TestMetadata) {
        let key = ReplayKey(userID: user, historyCount: index, testID: index % 2)
        let now = Date()
        return (
            ReplayRecord(
                key: key,
                replayName: "Pandora-05132024",
                samples: series(seed: index, mean: 3, samples: samples),
                receivedAt: now
            ),
            TestMetadata(replayName: "Pandora-05132024", startedAt: now, provider: "Bench", clientAddress: "192.0.2.1")
        )
    }

    func writes(_ store: SQLResultStore) async throws {
        let single = 2_000
        let start = ContinuousClock.now
        for index in 0..<single {
            let (replay, metadata) = Self.replayWrite(user: "@single", index: index, samples: samples)
            try await store.save(replay: replay, metadata: metadata)
        }
        let singleTime = Self.seconds(ContinuousClock.now - start)
        report(
            "replay writes/s, 1 writer",
            String(format: "%.0f (%d in %.2f s)", Double(single) / singleTime, single, singleTime))

        let perWriter = 500
        let samples = self.samples
        let concurrentStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for index in 0..<perWriter {
                        let (replay, metadata) = Self.replayWrite(
                            user: "@writer\(writer)", index: index, samples: samples)
                        try await store.save(replay: replay, metadata: metadata)
                    }
                }
            }
            try await group.waitForAll()
        }
        let concurrentTime = Self.seconds(ContinuousClock.now - concurrentStart)
        report(
            "replay writes/s, 8 writers",
            String(format: "%.0f (%d in %.2f s)", Double(8 * perWriter) / concurrentTime, 8 * perWriter, concurrentTime)
        )
    }

    func test(_ index: Int) -> TestRecord {
        let key = TestKey(userID: "@u\(index % 50_000)", historyCount: index)
        let provider = Self.providers[index % Self.providers.count]
        let replay = Self.replays[(index / Self.providers.count) % Self.replays.count]
        let started = Date(timeIntervalSince1970: 1_700_000_000 + Double(index) * 30)
        let verdict: Verdict =
            index % 7 == 0 ? .differentiation : (index % 11 == 0 ? .inconclusive : .noDifferentiation)
        return TestRecord(
            key: key,
            metadata: TestMetadata(
                replayName: replay,
                startedAt: started,
                provider: provider,
                networkType: index % 3 == 0 ? "WIFI" : "LTE",
                clientVersion: "3.3",
                clientAddress: "198.51.100.\(index % 256)"
            ),
            replays: [
                ReplayRecord(
                    key: key.replay(0), replayName: replay, samples: series(seed: index, mean: 2), receivedAt: started),
                ReplayRecord(
                    key: key.replay(1),
                    replayName: replay,
                    samples: series(seed: ~index, mean: 6),
                    receivedAt: started
                ),
            ],
            analyses: [
                AnalysisRecord(
                    test: key,
                    summary: AnalysisSummary(
                        areaTest: 0.4, ks2RatioTest: 0.97, originalMeanMbps: 2, controlMeanMbps: 6, ksStatistic: 0.5,
                        ksPValue: 0.001, verdict: verdict, direction: verdict == .differentiation ? .throttled : nil,
                        thresholds: AppliedThresholds(area: 0.5, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android")
                    ),
                    analysedAt: started
                )
            ]
        )
    }

    func seed(_ store: SQLResultStore) async throws {
        let batch = 2_000
        let start = ContinuousClock.now
        for first in stride(from: 0, to: total, by: batch) {
            try await store.save(tests: (first..<min(first + batch, total)).map(test))
        }
        let time = Self.seconds(ContinuousClock.now - start)
        report(
            "seeding, batched inserts",
            String(
                format: "%d tests in %.1f s (%.0f tests/s, %d per transaction)", total, time, Double(total) / time,
                batch)
        )
    }

    func counts(_ store: SQLResultStore) async throws {
        for attempt in 0..<2 {
            let start = ContinuousClock.now
            let rows = try await store.counts(CountQuery(groupBy: [.provider, .replay, .verdict]))
            let time = Self.seconds(ContinuousClock.now - start)
            report(
                "provider x app x verdict counts (\(attempt == 0 ? "cold" : "warm"))",
                String(
                    format: "%d groups, %d tests in %.0f ms", rows.count, rows.reduce(0) { $0 + $1.count }, time * 1000)
            )
        }
        let from = Date(timeIntervalSince1970: 1_700_000_000)
        let to = from.addingTimeInterval(Double(total) * 30 / 4)
        let start = ContinuousClock.now
        let rows = try await store.counts(CountQuery(groupBy: [.provider, .replay], from: from, to: to))
        let time = Self.seconds(ContinuousClock.now - start)
        report(
            "provider x app counts, first quarter of the time range",
            String(format: "%d groups, %d tests in %.0f ms", rows.count, rows.reduce(0) { $0 + $1.count }, time * 1000)
        )
    }

    func stream(_ store: SQLResultStore) async throws {
        var streamed = 0
        var sampleCount = 0
        var slower = 0
        let start = ContinuousClock.now
        for provider in Self.providers {
            for replay in Self.replays {
                for try await record in store.crowdTests(CrowdQuery(provider: provider, replayName: replay)) {
                    if let consume {
                        consume(record)
                    } else {
                        sampleCount += record.original.count + record.control.count
                        if record.originalMeanMbps < record.controlMeanMbps * 0.5 { slower += 1 }
                    }
                    streamed += 1
                }
            }
        }
        let time = Self.seconds(ContinuousClock.now - start)
        report(
            "stream into the crowd analysis",
            String(
                format:
                    "%d tests (%d samples, %d with original < half control) in %.1f s (%.0f tests/s) over %d groups",
                streamed, sampleCount, slower, time, Double(streamed) / time, Self.providers.count * Self.replays.count
            )
        )
    }

    static func adminSQL(_ url: String, _ statement: String) async throws {
        let configuration = try SQLPostgresConfiguration(url: url)
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(),
            configuration: configuration.coreConfiguration,
            id: 1,
            logger: Logger(label: "wehe-bench.admin")
        )
        do {
            try await connection.sql().raw(SQLQueryString(statement)).run()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
