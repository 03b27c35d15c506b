import Foundation
import WeheStore

/// The person's result history as a `ResultStore`: an in-memory store loaded from and written back to one JSON file
/// (`<data directory>/history.json`) after every complete test.
///
/// Interim: the SQLite `SQLResultStore` of `WeheStoreSQL` replaces this adapter once it lands; the client writes
/// through the same protocol either way. The file is replaced atomically, so a crash never leaves half a history.
actor HistoryFile: ResultStore {
    let path: String
    private let inner = InMemoryResultStore()

    nonisolated var databaseName: String { path }

    private init(path: String) {
        self.path = path
    }

    /// Opens (or starts) the history at `path`.
    static func open(path: String) async throws -> HistoryFile {
        let store = HistoryFile(path: path)
        if FileManager.default.fileExists(atPath: path) {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                let records = try JSONDecoder().decode([TestRecord].self, from: data)
                try await store.inner.save(tests: records)
            } catch {
                throw CLIError(code: .invalidInput, "the history file \(path) is unreadable: \(error)")
            }
        }
        return store
    }

    private func persist() async throws(WeheStoreError) {
        var records: [TestRecord] = []
        do {
            for try await record in inner.tests(TestFilter()) { records.append(record) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let directory = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try encoder.encode(records).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch let error as WeheStoreError {
            throw error
        } catch {
            throw WeheStoreError(.unavailable, database: path, "cannot write the history: \(error)")
        }
    }

    func save(replay: ReplayRecord, metadata: TestMetadata) async throws(WeheStoreError) {
        try await inner.save(replay: replay, metadata: metadata)
        try await persist()
    }
    func save(analysis: AnalysisRecord) async throws(WeheStoreError) {
        try await inner.save(analysis: analysis)
        try await persist()
    }
    func save(tests: [TestRecord]) async throws(WeheStoreError) {
        try await inner.save(tests: tests)
        try await persist()
    }
    func save(localization: LocalizationRun) async throws(WeheStoreError) {
        try await inner.save(localization: localization)
    }
    func append(events: [SessionEvent]) async throws(WeheStoreError) {
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
    func sessionEvents(_ query: SessionEventQuery) async throws(WeheStoreError) -> [SessionEvent] {
        try await inner.sessionEvents(query)
    }
    func sessionEventCounts(from: Date?, to: Date?) async throws(WeheStoreError) -> [SessionEventCount] {
        try await inner.sessionEventCounts(from: from, to: to)
    }
    func close() async { await inner.close() }
}
