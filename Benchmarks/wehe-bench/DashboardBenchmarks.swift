import Foundation
import Logging
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheWeb

/// `wehe-bench dashboard [history-tests] [crowd-tests] [--memory]`: SQLite stores in a temporary directory
/// (removed afterwards) unless `--memory`.
func runDashboardSuite(_ arguments: [String]) async {
    let numbers = arguments.compactMap(Int.init)
    let memory = arguments.contains("--memory")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wehe-bench-\(UUID().uuidString)")
        .path
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "wehe-bench.dashboard")
        logger.logLevel = .warning
        let quiet = logger
        try await runDashboardBenchmarks(
            historyTests: numbers.first ?? 10_000, crowdTests: numbers.dropFirst().first ?? 1_000_000
        ) {
            if memory { return InMemoryResultStore() }
            let path = directory + "/dashboard-\(UUID().uuidString).sqlite"
            return try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))), logger: quiet)
        }
    } catch {
        print("dashboard benchmark failed: \(error)")
    }
}

/// Dashboard render times (issue "The dashboard"): the history page over `historyTests` stored tests of one user
/// and the operator page (whose provider × app matrix is the costly part) over `crowdTests` tests. Seeds the store
/// through `ResultStore.save(tests:)` in batches, then renders each page `repetitions` times after a warm-up and
/// prints median and minimum. Run in release:
///   swift run -c release wehe-bench dashboard [history-tests] [crowd-tests]
///
/// `makeStore` creates the store to measure; `wehe-bench dashboard` passes an SQLite `SQLResultStore` (the figure
/// that counts: SQL does the aggregation).
func runDashboardBenchmarks(
    historyTests: Int = 10_000, crowdTests: Int = 1_000_000, repetitions: Int = 5,
    makeStore: @escaping @Sendable () async throws -> any ResultStore = { InMemoryResultStore() }
) async throws {
    let now = Date()
    print("dashboard: history page over \(historyTests) tests of one user, operator page over \(crowdTests) tests")

    let historyStore = try await makeStore()
    var generator = DemoHistory(seed: 1, samplesPerReplay: 20, analyse: false)
    var seeded = 0
    let seedStart = monotonicSeconds()
    while seeded < historyTests {
        let batch = min(1_000, historyTests - seeded)
        var records = generator.personTests(count: batch, now: now)
        for index in records.indices {
            let key = TestKey(userID: DemoHistory.personUserID, historyCount: seeded + index + 1)
            records[index] = retarget(records[index], to: key)
        }
        try await historyStore.save(tests: records)
        seeded += batch
    }
    print(
        "  seeded \(historyTests) person tests in \(fixed(monotonicSeconds() - seedStart, 2)) s (\(historyStore.databaseName))"
    )
    let person = try Dashboard(
        configuration: DashboardConfiguration(
            store: historyStore, userID: DemoHistory.personUserID, catalog: DemoHistory.catalog))
    let history = try await timeAsync(repetitions: repetitions) {
        let html = try await person.renderHistoryPage(language: .english)
        precondition(html.contains("<table class=\"history\">"))
    }
    print("  history page: median \(fixed(history.median * 1_000, 1)) ms, min \(fixed(history.min * 1_000, 1)) ms")
    await historyStore.close()

    let crowdStore = try await makeStore()
    var crowd = DemoHistory(seed: 2, samplesPerReplay: 4, analyse: false)
    seeded = 0
    let crowdStart = monotonicSeconds()
    while seeded < crowdTests {
        let batch = min(5_000, crowdTests - seeded)
        try await crowdStore.save(tests: crowd.crowdTests(count: batch, now: now, days: 365, firstUser: seeded))
        seeded += batch
    }
    print(
        "  seeded \(crowdTests) crowd tests in \(fixed(monotonicSeconds() - crowdStart, 1)) s, peak RSS "
            + "\(fixed(peakResidentMiB(), 0)) MiB")
    let operatorDashboard = try Dashboard(
        configuration: DashboardConfiguration(store: crowdStore, catalog: DemoHistory.catalog, operatorDefaultDays: 366)
    )
    let overview = try await timeAsync(repetitions: repetitions) {
        let html = try await operatorDashboard.renderOperatorPage(language: .english)
        precondition(html.contains("id=\"matrix-table\""))
    }
    print(
        "  operator page (matrix): median \(fixed(overview.median * 1_000, 1)) ms, min \(fixed(overview.min * 1_000, 1)) ms"
    )
    // The matrix count alone: over whole UTC days (SQL stores read their daily summary) and over the same range
    // moved by one second (they count the tests themselves), to show what the summary saves.
    let lastDay = now.storeDay + 1
    let wholeDays = CountQuery(
        groupBy: [.provider, .replay, .verdict], from: Date(timeIntervalSince1970: Double(lastDay - 366) * 86_400),
        to: Date(timeIntervalSince1970: Double(lastDay) * 86_400))
    var shifted = wholeDays
    shifted.from = wholeDays.from?.addingTimeInterval(1)
    shifted.to = wholeDays.to?.addingTimeInterval(1)
    for (label, query) in [("whole days (summary)", wholeDays), ("shifted by 1 s (tests table)", shifted)] {
        var rows = 0
        let timing = try await timeAsync(repetitions: repetitions) {
            rows = try await crowdStore.counts(query).reduce(0) { $0 + $1.count }
        }
        print(
            "  matrix count, \(label): median \(fixed(timing.median * 1_000, 1)) ms, min "
                + "\(fixed(timing.min * 1_000, 1)) ms (\(rows) tests)")
    }
    await crowdStore.close()
}

/// The same test under another key (its replays and analyses follow).
private func retarget(_ record: TestRecord, to key: TestKey) -> TestRecord {
    var copy = record
    copy.key = key
    copy.replays = record.replays.map { replay in
        var moved = replay
        moved.key = key.replay(replay.key.testID)
        return moved
    }
    copy.analyses = record.analyses.map { analysis in
        var moved = analysis
        moved.test = key
        return moved
    }
    return copy
}

/// Runs `body` `repetitions` times after one warm-up and returns (median, min) seconds.
private func timeAsync(repetitions: Int, _ body: () async throws -> Void) async throws -> (median: Double, min: Double)
{
    try await body()
    var times: [Double] = []
    for _ in 0..<max(1, repetitions) {
        let start = monotonicSeconds()
        try await body()
        times.append(monotonicSeconds() - start)
    }
    times.sort()
    return (times[times.count / 2], times[0])
}
