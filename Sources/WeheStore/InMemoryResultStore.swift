package import Foundation
package import WeheCore

/// A `ResultStore` that keeps everything in memory: for tests, demos and the behaviour suite's reference.
///
/// It follows the same semantics as the SQL stores (replacement by key, anonymisation, microsecond times, paging
/// by start time), so one suite of behaviour tests runs against all of them.
package actor InMemoryResultStore: ResultStore {
    private struct StoredTestRow {
        var id: Int64
        var metadata: TestMetadata
        var replays: [Int: ReplayRecord] = [:]
        var analyses: [Int: AnalysisRecord] = [:]
        var sensitive: SensitiveSummary?
    }

    /// `memory`.
    package nonisolated let databaseName = "memory"
    /// Page size of paged reads.
    package nonisolated let pageSize: Int
    private let policy: AnonymizationPolicy
    private var tests: [TestKey: StoredTestRow] = [:]
    private var storedLocalizations: [String: LocalizationRun] = [:]
    private var losses: [ReplayKey: ReplayLossRecord] = [:]
    private var events: [(id: Int64, event: SessionEvent)] = []
    private var dpiSearches: [DPISearchID: DPISearchRecord] = [:]
    private var dpiResultRows: [(id: Int64, result: DPIResultRecord)] = []
    private var nextID: Int64 = 1
    private var isClosed = false

    /// Creates an empty store.
    package init(anonymization: AnonymizationPolicy = .default, pageSize: Int = 500) {
        self.policy = anonymization
        self.pageSize = max(1, pageSize)
    }

    private func checkOpen() throws(WeheStoreError) {
        if isClosed { throw WeheStoreError(.closed, database: databaseName, "the store has been closed") }
    }

    private func makeID() -> Int64 {
        defer { nextID += 1 }
        return nextID
    }

    private func prepared(_ replay: ReplayRecord) -> ReplayRecord {
        var copy = replay
        copy.receivedAt = replay.receivedAt.storeRounded
        return copy
    }

    private func prepared(_ analysis: AnalysisRecord) -> AnalysisRecord {
        var copy = analysis
        copy.analysedAt = analysis.analysedAt.storeRounded
        return copy
    }

    // MARK: writes

    /// See `ResultStore.save(replay:metadata:)`.
    package func save(replay: ReplayRecord, metadata: TestMetadata) throws(WeheStoreError) {
        try checkOpen()
        let replay = prepared(try replay.validated(database: databaseName))
        let incoming = metadata.prepared(by: policy)
        let key = replay.key.test
        if var row = tests[key] {
            row.metadata = Self.merge(existing: row.metadata, incoming: incoming, isOriginal: replay.key.testID == 0)
            row.replays[replay.key.testID] = replay
            if replay.key.testID == 0 {
                row.analyses = [:]
            } else {
                row.analyses[replay.key.testID] = nil
            }
            tests[key] = row
        } else {
            var row = StoredTestRow(id: makeID(), metadata: incoming)
            row.replays[replay.key.testID] = replay
            tests[key] = row
        }
    }

    /// The metadata rule shared with the SQL stores: new values win where given, the start time follows the
    /// original replay.
    private static func merge(existing: TestMetadata, incoming: TestMetadata, isOriginal: Bool) -> TestMetadata {
        var merged = existing
        merged.replayName = incoming.replayName
        merged.startedAt = isOriginal ? incoming.startedAt : existing.startedAt
        merged.provider = incoming.provider ?? existing.provider
        merged.networkType = incoming.networkType ?? existing.networkType
        merged.clientVersion = incoming.clientVersion ?? existing.clientVersion
        merged.clientAddress = incoming.clientAddress ?? existing.clientAddress
        merged.serverName = incoming.serverName ?? existing.serverName
        merged.extraString = incoming.extraString ?? existing.extraString
        merged.asNumber = incoming.asNumber ?? existing.asNumber
        merged.scheduled = incoming.scheduled ?? existing.scheduled
        merged.asName = incoming.asName ?? existing.asName
        return merged
    }

    /// See `ResultStore.save(analysis:)`.
    package func save(analysis: AnalysisRecord) throws(WeheStoreError) {
        try checkOpen()
        let analysis = prepared(try analysis.validated(database: databaseName))
        guard var row = tests[analysis.test] else {
            throw WeheStoreError(
                .notFound, database: databaseName, "no test \(analysis.test) to attach the analysis to")
        }
        row.analyses[analysis.comparedTestID] = analysis
        tests[analysis.test] = row
    }

    /// See `ResultStore.save(tests:)`.
    package func save(tests records: [TestRecord]) throws(WeheStoreError) {
        try checkOpen()
        var validated: [TestRecord] = []
        for record in records { validated.append(try record.validated(database: databaseName)) }
        for record in validated {
            var row = StoredTestRow(
                id: tests[record.key]?.id ?? makeID(), metadata: record.metadata.prepared(by: policy))
            for replay in record.replays { row.replays[replay.key.testID] = prepared(replay) }
            for analysis in record.analyses { row.analyses[analysis.comparedTestID] = prepared(analysis) }
            row.sensitive = record.sensitive
            tests[record.key] = row
        }
    }

    private static func localizationKey(_ userID: String, _ counts: [Int]) -> String {
        "\(userID)|" + counts.map(String.init).joined(separator: ",")
    }

    /// See `ResultStore.save(localization:)`.
    package func save(localization: LocalizationRun) throws(WeheStoreError) {
        try checkOpen()
        var run = try localization.validated(database: databaseName)
        run.requestedAt = run.requestedAt.storeRounded
        storedLocalizations[Self.localizationKey(run.userID, run.historyCounts)] = run
    }

    /// See `ResultStore.save(loss:)`.
    package func save(loss: ReplayLossRecord) throws(WeheStoreError) {
        try checkOpen()
        var record = try loss.validated(database: databaseName)
        record.recordedAt = record.recordedAt.storeRounded
        losses[record.key] = record
    }

    /// See `ResultStore.loss(_:)`.
    package func loss(_ key: ReplayKey) throws(WeheStoreError) -> ReplayLossRecord? {
        try checkOpen()
        return losses[key]
    }

    /// See `ResultStore.append(events:)`.
    package func append(events newEvents: [SessionEvent]) throws(WeheStoreError) {
        try checkOpen()
        for event in newEvents { events.append((makeID(), event.prepared(by: policy))) }
    }

    /// See `ResultStore.purge(before:)`.
    package func purge(before cutoff: Date) throws(WeheStoreError) -> PurgeCounts {
        try checkOpen()
        var counts = PurgeCounts()
        for (key, row) in tests where row.metadata.startedAt < cutoff {
            counts.tests += 1
            counts.replays += row.replays.count
            counts.analyses += row.analyses.count
            tests[key] = nil
        }
        let oldRuns = storedLocalizations.filter { $0.value.requestedAt < cutoff }
        for key in oldRuns.keys { storedLocalizations[key] = nil }
        counts.localizations = oldRuns.count
        let oldLosses = losses.filter { $0.value.recordedAt < cutoff }
        for key in oldLosses.keys { losses[key] = nil }
        counts.losses = oldLosses.count
        let before = events.count
        events.removeAll { $0.event.at < cutoff }
        counts.events = before - events.count
        let abandoned = dpiSearches.filter { $0.value.updatedAt < cutoff }
        for key in abandoned.keys { dpiSearches[key] = nil }
        counts.dpiSearches = abandoned.count
        let results = dpiResultRows.count
        dpiResultRows.removeAll { $0.result.finishedAt < cutoff }
        counts.dpiResults = results - dpiResultRows.count
        return counts
    }

    // MARK: reads

    private func record(_ key: TestKey, _ row: StoredTestRow) -> TestRecord {
        TestRecord(
            key: key,
            metadata: row.metadata,
            replays: row.replays.keys.sorted().compactMap { row.replays[$0] },
            analyses: row.analyses.keys.sorted().compactMap { row.analyses[$0] },
            sensitive: row.sensitive
        )
    }

    /// See `ResultStore.test(_:)`.
    package func test(_ key: TestKey) throws(WeheStoreError) -> TestRecord? {
        try checkOpen()
        return tests[key].map { record(key, $0) }
    }

    /// See `ResultStore.history(userID:beforeHistoryCount:limit:)`.
    package func history(userID: String, beforeHistoryCount: Int?, limit: Int) throws(WeheStoreError)
        -> [TestOverview]
    {
        try checkOpen()
        return tests.filter { $0.key.userID == userID && $0.key.historyCount < (beforeHistoryCount ?? Int.max) }
            .sorted { $0.key.historyCount > $1.key.historyCount }
            .prefix(max(0, limit))
            .map { key, row in
                TestOverview(
                    key: key,
                    metadata: row.metadata,
                    originalMeanMbps: row.replays[0]?.samples.meanMbps,
                    controlMeanMbps: row.replays[1]?.samples.meanMbps,
                    analysis: row.analyses[1]?.summary,
                    sensitive: row.sensitive
                )
            }
    }

    /// The rows matching `include`, after `cursor`, in (start time, id) order, one page long.
    private func page<Element: Sendable>(
        after cursor: PageCursor?,
        include: (TestKey, StoredTestRow) -> Bool,
        make: (TestKey, StoredTestRow) -> Element?
    ) throws(WeheStoreError) -> StorePage<Element> {
        try checkOpen()
        let ordered = tests.filter { include($0.key, $0.value) }
            .map { (time: $0.value.metadata.startedAt.storeMicroseconds, id: $0.value.id, key: $0.key, row: $0.value) }
            .filter { entry in
                guard let cursor else { return true }
                return (entry.time, entry.id) > (cursor.time, cursor.id)
            }
            .sorted { ($0.time, $0.id) < ($1.time, $1.id) }
        let slice = ordered.prefix(pageSize)
        let elements = slice.compactMap { make($0.key, $0.row) }
        let last = slice.last
        let next = ordered.count > pageSize ? last.map { PageCursor(time: $0.time, id: $0.id) } : nil
        return StorePage(elements: elements, next: next)
    }

    private static func inRange(_ date: Date, from: Date?, to: Date?) -> Bool {
        let micros = date.storeMicroseconds
        if let from, micros < from.storeMicroseconds { return false }
        if let to, micros >= to.storeMicroseconds { return false }
        return true
    }

    private func crowdPage(_ query: CrowdQuery, after cursor: PageCursor?) throws(WeheStoreError)
        -> StorePage<CrowdTestRecord>
    {
        try page(after: cursor) { _, row in
            row.metadata.provider == query.provider && row.metadata.replayName == query.replayName
                && row.replays[0] != nil && row.replays[1] != nil
                && Self.inRange(row.metadata.startedAt, from: query.from, to: query.to)
        } make: { key, row in
            guard let original = row.replays[0]?.samples, let control = row.replays[1]?.samples else { return nil }
            let empty = ThroughputSeries(mbps: [], times: [])
            return CrowdTestRecord(
                key: key,
                provider: query.provider,
                replayName: query.replayName,
                startedAt: row.metadata.startedAt,
                networkType: row.metadata.networkType,
                originalMeanMbps: original.meanMbps ?? 0,
                controlMeanMbps: control.meanMbps ?? 0,
                original: query.includeSamples ? original : empty,
                control: query.includeSamples ? control : empty
            )
        }
    }

    private func testPage(_ filter: TestFilter, after cursor: PageCursor?) throws(WeheStoreError)
        -> StorePage<TestRecord>
    {
        try page(after: cursor) { _, row in
            Self.inRange(row.metadata.startedAt, from: filter.from, to: filter.to)
                && (filter.provider.map { $0 == row.metadata.provider } ?? true)
                && (filter.replayName.map { $0 == row.metadata.replayName } ?? true)
        } make: { key, row in
            record(key, row)
        }
    }

    /// See `ResultStore.crowdTests(_:)`.
    package nonisolated func crowdTests(_ query: CrowdQuery) -> StorePages<CrowdTestRecord> {
        StorePages { cursor throws(WeheStoreError) in try await self.crowdPage(query, after: cursor) }
    }

    /// See `ResultStore.tests(_:)`.
    package nonisolated func tests(_ filter: TestFilter) -> StorePages<TestRecord> {
        StorePages { cursor throws(WeheStoreError) in try await self.testPage(filter, after: cursor) }
    }

    /// See `ResultStore.counts(_:)`.
    package func counts(_ query: CountQuery) throws(WeheStoreError) -> [CountRow] {
        try checkOpen()
        var groups: [CountRow: Int] = [:]
        let dimensions = Set(query.groupBy)
        for row in tests.values {
            let metadata = row.metadata
            let verdict = row.analyses[1]?.summary.verdict
            guard Self.inRange(metadata.startedAt, from: query.from, to: query.to) else { continue }
            if let providers = query.providers, !providers.contains(where: { $0 == metadata.provider }) { continue }
            if let replays = query.replays, !replays.contains(metadata.replayName) { continue }
            if let verdicts = query.verdicts, !verdicts.contains(where: { $0 == verdict }) { continue }
            let key = CountRow(
                provider: dimensions.contains(.provider) ? metadata.provider : nil,
                replayName: dimensions.contains(.replay) ? metadata.replayName : nil,
                verdict: dimensions.contains(.verdict) ? verdict : nil,
                day: dimensions.contains(.day) ? metadata.startedAt.storeDay : nil,
                networkType: dimensions.contains(.networkType) ? metadata.networkType : nil,
                count: 0
            )
            groups[key, default: 0] += 1
        }
        if groups.isEmpty && query.groupBy.isEmpty { return [CountRow(count: 0)] }
        return groups.map { key, count in
            var row = key
            row.count = count
            return row
        }
        .sorted(by: CountRow.storeOrder)
    }

    /// See `ResultStore.localization(userID:historyCounts:)`.
    package func localization(userID: String, historyCounts: [Int]) throws(WeheStoreError) -> LocalizationRun? {
        try checkOpen()
        return storedLocalizations[Self.localizationKey(userID, historyCounts)]
    }

    /// See `ResultStore.localizations(userID:)`.
    package func localizations(userID: String) throws(WeheStoreError) -> [LocalizationRun] {
        try checkOpen()
        return storedLocalizations.values.filter { $0.userID == userID }
            .sorted { ($0.requestedAt, $0.historyCounts.first ?? 0) > ($1.requestedAt, $1.historyCounts.first ?? 0) }
    }

    /// See `ResultStore.localizationRuns(from:to:limit:)`.
    package func localizationRuns(from: Date?, to: Date?, limit: Int) throws(WeheStoreError) -> [LocalizationRun] {
        try checkOpen()
        let selected = storedLocalizations.values.filter { run in
            let time = run.requestedAt.storeMicroseconds
            return (from.map { time >= $0.storeMicroseconds } ?? true)
                && (to.map { time < $0.storeMicroseconds } ?? true)
        }
        return Array(
            selected.sorted {
                ($0.requestedAt, $0.userID, $0.historyCounts.first ?? 0)
                    > ($1.requestedAt, $1.userID, $1.historyCounts.first ?? 0)
            }.prefix(max(0, limit)))
    }

    /// See `ResultStore.sessionEvents(_:)`.
    package func sessionEvents(_ query: SessionEventQuery) throws(WeheStoreError) -> [SessionEvent] {
        try checkOpen()
        return events.filter { entry in
            Self.inRange(entry.event.at, from: query.from, to: query.to)
                && (query.kinds.map { $0.contains(entry.event.kind) } ?? true)
        }
        .sorted { ($0.event.at, $0.id) > ($1.event.at, $1.id) }
        .prefix(max(0, query.limit))
        .map(\.event)
    }

    /// See `ResultStore.sessionEventCounts(from:to:)`.
    package func sessionEventCounts(from: Date?, to: Date?) throws(WeheStoreError) -> [SessionEventCount] {
        try checkOpen()
        var counts: [SessionEvent.Kind: Int] = [:]
        for entry in events where Self.inRange(entry.event.at, from: from, to: to) {
            counts[entry.event.kind, default: 0] += 1
        }
        return counts.map { SessionEventCount(kind: $0.key, count: $0.value) }.sorted {
            $0.kind.rawValue < $1.kind.rawValue
        }
    }

    // MARK: DPI searches

    /// See `ResultStore.dpiSearch(_:)`.
    package func dpiSearch(_ id: DPISearchID) throws(WeheStoreError) -> DPISearchRecord? {
        try checkOpen()
        return dpiSearches[id]
    }

    /// See `ResultStore.save(dpiSearch:)`.
    package func save(dpiSearch: DPISearchRecord) throws(WeheStoreError) {
        try checkOpen()
        var copy = dpiSearch
        copy.startedAt = copy.startedAt.storeRounded
        copy.updatedAt = copy.updatedAt.storeRounded
        dpiSearches[dpiSearch.id] = copy
    }

    /// See `ResultStore.deleteDPISearch(_:)`.
    package func deleteDPISearch(_ id: DPISearchID) throws(WeheStoreError) -> Bool {
        try checkOpen()
        return dpiSearches.removeValue(forKey: id) != nil
    }

    /// See `ResultStore.finish(dpiSearch:)`.
    package func finish(dpiSearch result: DPIResultRecord) throws(WeheStoreError) {
        try checkOpen()
        var copy = result
        copy.startedAt = copy.startedAt.storeRounded
        copy.finishedAt = copy.finishedAt.storeRounded
        dpiSearches[result.id] = nil
        dpiResultRows.append((makeID(), copy))
    }

    /// See `ResultStore.dpiResults(_:)`.
    package func dpiResults(_ query: DPIResultQuery) throws(WeheStoreError) -> [DPIResultRecord] {
        try checkOpen()
        return
            dpiResultRows
            .filter { query.matches($0.result) }
            .sorted { ($0.result.finishedAt, $0.id) > ($1.result.finishedAt, $1.id) }
            .prefix(max(0, query.limit))
            .map(\.result)
    }

    /// See `ResultStore.close()`.
    package func close() {
        isClosed = true
    }
}

extension CountRow {
    /// The order in which every store returns count rows: by day, provider, replay, network type, verdict
    /// (absent values first).
    package static func storeOrder(_ lhs: CountRow, _ rhs: CountRow) -> Bool {
        func key(_ row: CountRow) -> [String] {
            [
                row.day.map { String(format: "%012d", $0 + 100_000_000) } ?? "",
                row.provider.map { "+" + $0 } ?? "",
                row.replayName.map { "+" + $0 } ?? "",
                row.networkType.map { "+" + $0 } ?? "",
                row.verdict.map { "+" + $0.rawValue } ?? "",
            ]
        }
        return key(lhs).lexicographicallyPrecedes(key(rhs))
    }
}
