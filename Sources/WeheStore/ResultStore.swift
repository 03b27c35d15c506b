package import Foundation
package import WeheCore

/// The result store shared by the client (a person's own history) and the server (every test it ran).
///
/// Implementations: `InMemoryResultStore` (tests, demos) and `SQLResultStore` in `WeheStoreSQL` (SQLite and
/// PostgreSQL). Every method reports failure as a `WeheStoreError` naming the database and the cause; a write
/// that returned normally is durable (acknowledged). Client addresses are anonymised by the store on write.
package protocol ResultStore: Sendable {
    /// The database this store writes to, as named in errors (`memory`, a path, or `host:port/database`).
    var databaseName: String { get }

    /// Stores the samples of one replay, creating or updating the test's metadata. Replaces an earlier replay with
    /// the same key and drops the analyses that read the replaced samples: all of them for the original (testID 0),
    /// else the comparison of the original with this testID. The test's verdict (original against control) is
    /// cleared with its analysis; a DPI probe or a later replay of the same test leaves it as it was.
    func save(replay: ReplayRecord, metadata: TestMetadata) async throws(WeheStoreError)

    /// Stores an analysis. The test must exist (`.notFound` otherwise). Replaces an earlier analysis of the same
    /// test and compared testID.
    func save(analysis: AnalysisRecord) async throws(WeheStoreError)

    /// Stores whole tests (metadata, replays, analyses), replacing the earlier data of each key, in one
    /// transaction: either all are stored or none.
    func save(tests: [TestRecord]) async throws(WeheStoreError)

    /// Stores a localization run, replacing an earlier run with the same user and history counts.
    func save(localization: LocalizationRun) async throws(WeheStoreError)

    /// Stores the loss timeline of one replay, replacing an earlier one with the same key. The test need not exist
    /// yet (the replay connection may end before the client uploads its samples).
    func save(loss: ReplayLossRecord) async throws(WeheStoreError)

    /// Appends entries to the session log.
    func append(events: [SessionEvent]) async throws(WeheStoreError)

    /// One test in full, or `nil` if it is not stored.
    func test(_ key: TestKey) async throws(WeheStoreError) -> TestRecord?

    /// A user's tests, newest (highest history count) first, at most `limit`, only those with a history count
    /// below `beforeHistoryCount` when given (for paging).
    func history(userID: String, beforeHistoryCount: Int?, limit: Int) async throws(WeheStoreError) -> [TestOverview]

    /// The tests of one (provider, replay) over a time range with both replays, read page by page.
    func crowdTests(_ query: CrowdQuery) -> StorePages<CrowdTestRecord>

    /// Every test matching the filter, in full, ordered by start time, read page by page.
    func tests(_ filter: TestFilter) -> StorePages<TestRecord>

    /// Test counts grouped as asked, aggregated by the store.
    func counts(_ query: CountQuery) async throws(WeheStoreError) -> [CountRow]

    /// The loss timeline of one replay, or `nil` if none is stored.
    func loss(_ key: ReplayKey) async throws(WeheStoreError) -> ReplayLossRecord?

    /// A localization run, or `nil` if it is not stored.
    func localization(userID: String, historyCounts: [Int]) async throws(WeheStoreError) -> LocalizationRun?

    /// A user's localization runs, newest first.
    func localizations(userID: String) async throws(WeheStoreError) -> [LocalizationRun]

    /// Localization runs of every user requested in `[from, to)` (either bound optional), newest first, at most
    /// `limit` (for the operator dashboard).
    func localizationRuns(from: Date?, to: Date?, limit: Int) async throws(WeheStoreError) -> [LocalizationRun]

    /// Session-log entries, newest first.
    func sessionEvents(_ query: SessionEventQuery) async throws(WeheStoreError) -> [SessionEvent]

    /// Session-log entries per kind over a time range.
    func sessionEventCounts(from: Date?, to: Date?) async throws(WeheStoreError) -> [SessionEventCount]

    /// Deletes everything older than `cutoff` (retention, `wehe-server db purge`): tests started before it with their
    /// replays (samples) and analyses, localization runs requested before it, loss timelines recorded before it and
    /// session-log entries before it, in one transaction. Returns what was deleted.
    func purge(before cutoff: Date) async throws(WeheStoreError) -> PurgeCounts

    /// The DPI search in progress for `id`, or `nil`.
    func dpiSearch(_ id: DPISearchID) async throws(WeheStoreError) -> DPISearchRecord?

    /// Stores a DPI search in progress, replacing the earlier state of the same search.
    func save(dpiSearch: DPISearchRecord) async throws(WeheStoreError)

    /// Drops the DPI search in progress for `id` (finished results stay). Returns whether there was one.
    func deleteDPISearch(_ id: DPISearchID) async throws(WeheStoreError) -> Bool

    /// Records a finished DPI search and drops its state, in one transaction.
    func finish(dpiSearch result: DPIResultRecord) async throws(WeheStoreError)

    /// Finished DPI searches matching `query`, newest (latest finish) first.
    func dpiResults(_ query: DPIResultQuery) async throws(WeheStoreError) -> [DPIResultRecord]

    /// Releases connections and files. Further calls fail with `.closed`.
    func close() async
}

/// What `ResultStore.purge(before:)` deleted.
package struct PurgeCounts: Sendable, Hashable, CustomStringConvertible {
    /// Tests (their metadata rows).
    package var tests = 0
    /// Replays (throughput samples) of those tests.
    package var replays = 0
    /// Analyses of those tests.
    package var analyses = 0
    /// Localization runs.
    package var localizations = 0
    /// Loss timelines.
    package var losses = 0
    /// Session-log entries.
    package var events = 0
    /// DPI searches left running (not updated since the cutoff: abandoned).
    package var dpiSearches = 0
    /// Finished DPI searches (their outcomes and rules).
    package var dpiResults = 0

    /// Creates counts.
    package init(
        tests: Int = 0, replays: Int = 0, analyses: Int = 0, localizations: Int = 0, losses: Int = 0, events: Int = 0,
        dpiSearches: Int = 0, dpiResults: Int = 0
    ) {
        self.tests = tests
        self.replays = replays
        self.analyses = analyses
        self.localizations = localizations
        self.losses = losses
        self.events = events
        self.dpiSearches = dpiSearches
        self.dpiResults = dpiResults
    }

    /// Whether nothing was deleted.
    package var isEmpty: Bool { self == PurgeCounts() }

    /// `tests 3, replays 6, analyses 3, localizations 0, loss timelines 2, session events 40, DPI searches 0 running
    /// and 1 finished`.
    package var description: String {
        "tests \(tests), replays \(replays), analyses \(analyses), localizations \(localizations), "
            + "loss timelines \(losses), session events \(events), DPI searches \(dpiSearches) running and "
            + "\(dpiResults) finished"
    }
}

extension ResultStore {
    /// Stores one whole test.
    package func save(test: TestRecord) async throws(WeheStoreError) {
        try await save(tests: [test])
    }

    /// Appends one entry to the session log.
    package func append(event: SessionEvent) async throws(WeheStoreError) {
        try await append(events: [event])
    }
}
