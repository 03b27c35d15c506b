import Foundation
import WeheCore
import WeheStore

/// A store that fails on demand in front of an in-memory store: the test fake for `BufferedResultWriter`.
actor FlakyStore: ResultStore {
    nonisolated let databaseName = "flaky"
    let inner = InMemoryResultStore()
    /// The error every write throws while set.
    var failure: WeheStoreError.Code?
    /// After this many failed writes, `failure` clears by itself (`nil`: never).
    var recoverAfter: Int?
    /// Writes attempted while failing.
    private(set) var failedAttempts = 0

    func fail(with code: WeheStoreError.Code?, recoverAfter: Int? = nil) {
        failure = code
        self.recoverAfter = recoverAfter
    }

    private func gate() throws(WeheStoreError) {
        guard let failure else { return }
        failedAttempts += 1
        if let limit = recoverAfter, failedAttempts >= limit { self.failure = nil }
        throw WeheStoreError(failure, database: databaseName, "injected failure")
    }

    func save(replay: ReplayRecord, metadata: TestMetadata) async throws(WeheStoreError) {
        try gate()
        try await inner.save(replay: replay, metadata: metadata)
    }

    func purge(before cutoff: Date) async throws(WeheStoreError) -> PurgeCounts {
        try gate()
        return try await inner.purge(before: cutoff)
    }

    func save(analysis: AnalysisRecord) async throws(WeheStoreError) {
        try gate()
        try await inner.save(analysis: analysis)
    }

    func save(tests: [TestRecord]) async throws(WeheStoreError) {
        try gate()
        try await inner.save(tests: tests)
    }

    func save(localization: LocalizationRun) async throws(WeheStoreError) {
        try gate()
        try await inner.save(localization: localization)
    }

    func save(loss: ReplayLossRecord) async throws(WeheStoreError) {
        try gate()
        try await inner.save(loss: loss)
    }

    func loss(_ key: ReplayKey) async throws(WeheStoreError) -> ReplayLossRecord? { try await inner.loss(key) }

    func append(events: [SessionEvent]) async throws(WeheStoreError) {
        try gate()
        try await inner.append(events: events)
    }

    func test(_ key: TestKey) async throws(WeheStoreError) -> TestRecord? { try await inner.test(key) }

    func history(userID: String, beforeHistoryCount: Int?, limit: Int) async throws(WeheStoreError) -> [TestOverview] {
        try await inner.history(userID: userID, beforeHistoryCount: beforeHistoryCount, limit: limit)
    }

    nonisolated func crowdTests(_ query: CrowdQuery) -> StorePages<CrowdTestRecord> { inner.crowdTests(query) }

    nonisolated func tests(_ filter: TestFilter) -> StorePages<TestRecord> { inner.tests(filter) }

    func counts(_ query: CountQuery) async throws(WeheStoreError) -> [CountRow] { try await inner.counts(query) }

    func localization(userID: String, historyCounts: [Int]) async throws(WeheStoreError) -> LocalizationRun? {
        try await inner.localization(userID: userID, historyCounts: historyCounts)
    }

    func localizations(userID: String) async throws(WeheStoreError) -> [LocalizationRun] {
        try await inner.localizations(userID: userID)
    }

    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws(WeheStoreError) -> [LocalizationRun] {
        try await inner.localizationRuns(from: from, to: to, limit: limit)
    }

    func sessionEvents(_ query: SessionEventQuery) async throws(WeheStoreError) -> [SessionEvent] {
        try await inner.sessionEvents(query)
    }

    func sessionEventCounts(from: Date?, to: Date?) async throws(WeheStoreError) -> [SessionEventCount] {
        try await inner.sessionEventCounts(from: from, to: to)
    }

    func dpiSearch(_ id: DPISearchID) async throws(WeheStoreError) -> DPISearchRecord? {
        try await inner.dpiSearch(id)
    }

    func save(dpiSearch: DPISearchRecord) async throws(WeheStoreError) {
        try gate()
        try await inner.save(dpiSearch: dpiSearch)
    }

    func deleteDPISearch(_ id: DPISearchID) async throws(WeheStoreError) -> Bool {
        try gate()
        return try await inner.deleteDPISearch(id)
    }

    func finish(dpiSearch result: DPIResultRecord) async throws(WeheStoreError) {
        try gate()
        try await inner.finish(dpiSearch: result)
    }

    func dpiResults(_ query: DPIResultQuery) async throws(WeheStoreError) -> [DPIResultRecord] {
        try await inner.dpiResults(query)
    }

    func close() async { await inner.close() }
}

/// A clock whose sleeps return at once and are recorded, so back-off is tested without waiting.
final class RecordingClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    private var recorded: [Duration] = []

    var now: Instant { lock.withLock { current } }
    var minimumResolution: Duration { .nanoseconds(1) }
    var sleeps: [Duration] { lock.withLock { recorded } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        lock.withLock {
            recorded.append(deadline.offset - current.offset)
            current = max(current, deadline)
        }
        await Task.yield()
    }
}
