package import Foundation
internal import SQLKit
internal import WeheCore
package import WeheStore

extension SQLRow {
    func optional<T: Decodable>(_ column: String, as type: T.Type = T.self) throws -> T? {
        try decodeNil(column: column) ? nil : decode(column: column, as: T.self)
    }

    /// A statistic column: SQLite stores NaN as NULL, so NULL reads back as NaN.
    func statistic(_ column: String) throws -> Double {
        try optional(column, as: Double.self) ?? .nan
    }

    func date(_ column: String) throws -> Date {
        Date(storeMicroseconds: try decode(column: column, as: Int64.self))
    }
}

extension SQLResultStore {
    static let testSelect = """
        t.id, t.user_id, t.history_count, t.replay_name, t.started_at, t.provider, t.network_type, t.client_version, \
        t.client_address, t.server_name, t.extra_string, t.original_mean, t.control_mean, t.as_number, t.as_name, \
        t.scheduled
        """

    static let analysisSelect = """
        a.test_id, a.compared_test_index, a.analysed_at, a.verdict, a.direction, a.area_test, a.ks2_ratio_test, \
        a.original_mean AS a_original_mean, a.control_mean AS a_control_mean, a.ks_statistic, a.ks_p_value, \
        a.area_threshold, a.ks_p_threshold, a.ks2_ratio_threshold, a.rule_set, a.note
        """

    static func key(_ row: any SQLRow) throws -> TestKey {
        TestKey(
            userID: try row.decode(column: "user_id", as: String.self),
            historyCount: try row.decode(column: "history_count", as: Int.self)
        )
    }

    static func metadata(_ row: any SQLRow) throws -> TestMetadata {
        TestMetadata(
            replayName: try row.decode(column: "replay_name", as: String.self),
            startedAt: try row.date("started_at"),
            provider: try row.optional("provider"),
            networkType: try row.optional("network_type"),
            clientVersion: try row.optional("client_version"),
            clientAddress: try row.optional("client_address"),
            serverName: try row.optional("server_name"),
            extraString: try row.optional("extra_string"),
            asNumber: try row.optional("as_number"),
            asName: try row.optional("as_name"),
            scheduled: try row.optional("scheduled", as: Int.self).map { $0 != 0 }
        )
    }

    func verdict(_ text: String) throws -> Verdict {
        guard let verdict = Verdict(rawValue: text) else {
            throw WeheStoreError(.corrupted, database: databaseName, "unknown verdict \"\(text)\" in the database")
        }
        return verdict
    }

    func direction(_ text: String?) throws -> DifferentiationDirection? {
        guard let text else { return nil }
        guard let direction = DifferentiationDirection(rawValue: text) else {
            throw WeheStoreError(.corrupted, database: databaseName, "unknown direction \"\(text)\" in the database")
        }
        return direction
    }

    /// An `AnalysisSummary` from a row selected with `analysisSelect`.
    func summary(_ row: any SQLRow) throws -> AnalysisSummary {
        AnalysisSummary(
            areaTest: try row.statistic("area_test"),
            ks2RatioTest: try row.statistic("ks2_ratio_test"),
            originalMeanMbps: try row.statistic("a_original_mean"),
            controlMeanMbps: try row.statistic("a_control_mean"),
            ksStatistic: try row.statistic("ks_statistic"),
            ksPValue: try row.statistic("ks_p_value"),
            verdict: try verdict(try row.decode(column: "verdict", as: String.self)),
            direction: try direction(try row.optional("direction")),
            thresholds: AppliedThresholds(
                area: try row.statistic("area_threshold"),
                ksPValue: try row.statistic("ks_p_threshold"),
                ks2Ratio: try row.optional("ks2_ratio_threshold"),
                ruleSet: try row.decode(column: "rule_set", as: String.self)
            ),
            note: try row.optional("note")
        )
    }

    func samples(_ row: any SQLRow, column: String, test: TestKey) throws -> ThroughputSeries {
        let data = try row.decode(column: column, as: Data.self)
        guard let series = SampleCodec.decode(data) else {
            throw WeheStoreError(.corrupted, database: databaseName, "the samples of test \(test) cannot be decoded")
        }
        return series
    }

    /// Replays and analyses of the tests with the given row ids, completed into records.
    private func complete(
        _ rows: [(id: Int64, key: TestKey, metadata: TestMetadata)],
        on database: any SQLDatabase
    ) async throws -> [TestRecord] {
        guard !rows.isEmpty else { return [] }
        let ids = rows.map(\.id)
        var keys: [Int64: TestKey] = [:]
        for row in rows { keys[row.id] = row.key }
        var replays: [Int64: [ReplayRecord]] = [:]
        for row in try await database.raw(
            """
            SELECT test_id, test_index, replay_name, received_at, samples, client_duration, reached_time_limit
            FROM wehe_replays
            WHERE test_id IN (\(binds: ids)) ORDER BY test_id, test_index
            """
        ).all() {
            let testID = try row.decode(column: "test_id", as: Int64.self)
            guard let key = keys[testID] else { continue }
            replays[testID, default: []].append(
                ReplayRecord(
                    key: key.replay(try row.decode(column: "test_index", as: Int.self)),
                    replayName: try row.decode(column: "replay_name", as: String.self),
                    samples: try samples(row, column: "samples", test: key),
                    receivedAt: try row.date("received_at"),
                    clientDurationSeconds: try row.optional("client_duration"),
                    reachedTimeLimit: try (row.optional("reached_time_limit") as Int?).map { $0 != 0 }
                )
            )
        }
        var analyses: [Int64: [AnalysisRecord]] = [:]
        for row in try await database.raw(
            """
            SELECT \(unsafeRaw: Self.analysisSelect) FROM wehe_analyses a
            WHERE a.test_id IN (\(binds: ids)) ORDER BY a.test_id, a.compared_test_index
            """
        ).all() {
            let testID = try row.decode(column: "test_id", as: Int64.self)
            guard let key = keys[testID] else { continue }
            analyses[testID, default: []].append(
                AnalysisRecord(
                    test: key,
                    comparedTestID: try row.decode(column: "compared_test_index", as: Int.self),
                    summary: try summary(row),
                    analysedAt: try row.date("analysed_at")
                )
            )
        }
        let sensitive = try await readSensitive(ids, on: database)
        return rows.map {
            TestRecord(
                key: $0.key, metadata: $0.metadata, replays: replays[$0.id] ?? [], analyses: analyses[$0.id] ?? [],
                sensitive: sensitive[$0.id])
        }
    }

    /// See `ResultStore.test(_:)`.
    package func test(_ key: TestKey) async throws(WeheStoreError) -> TestRecord? {
        try await read { database in
            guard
                let row = try await database.raw(
                    """
                    SELECT \(unsafeRaw: Self.testSelect) FROM wehe_tests t
                    WHERE t.user_id = \(bind: key.userID) AND t.history_count = \(bind: key.historyCount)
                    """
                ).first()
            else { return nil }
            let entry = (id: try row.decode(column: "id", as: Int64.self), key: key, metadata: try Self.metadata(row))
            return try await self.complete([entry], on: database).first
        }
    }

    /// See `ResultStore.history(userID:beforeHistoryCount:limit:)`.
    package func history(userID: String, beforeHistoryCount: Int?, limit: Int) async throws(WeheStoreError)
        -> [TestOverview]
    {
        let before: SQLQueryString = beforeHistoryCount.map { "AND t.history_count < \(bind: $0)" } ?? ""
        return try await read { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: Self.testSelect), \(unsafeRaw: Self.analysisSelect), t.sensitive FROM wehe_tests t
                LEFT JOIN wehe_analyses a ON a.test_id = t.id AND a.compared_test_index = 1
                WHERE t.user_id = \(bind: userID) \(before)
                ORDER BY t.history_count DESC LIMIT \(bind: max(0, limit))
                """
            ).all().map { row in
                TestOverview(
                    key: try Self.key(row),
                    metadata: try Self.metadata(row),
                    originalMeanMbps: try row.optional("original_mean"),
                    controlMeanMbps: try row.optional("control_mean"),
                    analysis: try row.decodeNil(column: "test_id") ? nil : try self.summary(row),
                    sensitive: try self.historySensitive(row)
                )
            }
        }
    }

    /// `AND` conditions on `t.started_at` for a time range and a cursor.
    static func rangeConditions(from: Date?, to: Date?, after cursor: PageCursor?) -> SQLQueryString {
        var conditions: [SQLQueryString] = []
        if let from { conditions.append(" AND t.started_at >= \(bind: from.storeMicroseconds)") }
        if let to { conditions.append(" AND t.started_at < \(bind: to.storeMicroseconds)") }
        if let cursor { conditions.append(" AND (t.started_at, t.id) > (\(bind: cursor.time), \(bind: cursor.id))") }
        return conditions.joined()
    }

    /// See `ResultStore.crowdTests(_:)`.
    package func crowdTests(_ query: CrowdQuery) -> StorePages<CrowdTestRecord> {
        StorePages { cursor throws(WeheStoreError) in try await self.crowdPage(query, after: cursor) }
    }

    private func crowdPage(_ query: CrowdQuery, after cursor: PageCursor?) async throws(WeheStoreError)
        -> StorePage<CrowdTestRecord>
    {
        let pageSize = configuration.pageSize
        let sampleColumns: SQLQueryString =
            query.includeSamples ? ", o.samples AS o_samples, c.samples AS c_samples" : ""
        let sql: SQLQueryString = """
            SELECT t.id, t.user_id, t.history_count, t.started_at, t.network_type,
            o.mean_mbps AS o_mean, c.mean_mbps AS c_mean\(sampleColumns)
            FROM wehe_tests t
            JOIN wehe_replays o ON o.test_id = t.id AND o.test_index = 0
            JOIN wehe_replays c ON c.test_id = t.id AND c.test_index = 1
            WHERE t.provider = \(bind: query.provider) AND t.replay_name = \(bind: query.replayName)
            \(Self.rangeConditions(from: query.from, to: query.to, after: cursor))
            ORDER BY t.started_at, t.id LIMIT \(bind: pageSize)
            """
        return try await run {
            try await self.backend.withReader { database in
                var records: [CrowdTestRecord] = []
                var last: PageCursor?
                let empty = ThroughputSeries(mbps: [], times: [])
                for row in try await database.raw(sql).all() {
                    let key = try Self.key(row)
                    let startedAt = try row.decode(column: "started_at", as: Int64.self)
                    last = PageCursor(time: startedAt, id: try row.decode(column: "id", as: Int64.self))
                    records.append(
                        CrowdTestRecord(
                            key: key,
                            provider: query.provider,
                            replayName: query.replayName,
                            startedAt: Date(storeMicroseconds: startedAt),
                            networkType: try row.optional("network_type"),
                            originalMeanMbps: try row.optional("o_mean") ?? 0,
                            controlMeanMbps: try row.optional("c_mean") ?? 0,
                            original: query.includeSamples
                                ? try self.samples(row, column: "o_samples", test: key) : empty,
                            control: query.includeSamples
                                ? try self.samples(row, column: "c_samples", test: key) : empty
                        )
                    )
                }
                return StorePage(elements: records, next: records.count == pageSize ? last : nil)
            }
        }
    }

    /// See `ResultStore.tests(_:)`.
    package func tests(_ filter: TestFilter) -> StorePages<TestRecord> {
        StorePages { cursor throws(WeheStoreError) in try await self.testPage(filter, after: cursor) }
    }

    private func testPage(_ filter: TestFilter, after cursor: PageCursor?) async throws(WeheStoreError)
        -> StorePage<TestRecord>
    {
        let pageSize = configuration.pageSize
        var conditions = Self.rangeConditions(from: filter.from, to: filter.to, after: cursor)
        if let provider = filter.provider { conditions += " AND t.provider = \(bind: provider)" }
        if let replay = filter.replayName { conditions += " AND t.replay_name = \(bind: replay)" }
        let sql: SQLQueryString = """
            SELECT \(unsafeRaw: Self.testSelect) FROM wehe_tests t WHERE 1 = 1 \(conditions)
            ORDER BY t.started_at, t.id LIMIT \(bind: pageSize)
            """
        return try await read { database in
            let rows = try await database.raw(sql).all()
            var entries: [(id: Int64, key: TestKey, metadata: TestMetadata)] = []
            var last: PageCursor?
            for row in rows {
                let id = try row.decode(column: "id", as: Int64.self)
                entries.append((id, try Self.key(row), try Self.metadata(row)))
                last = PageCursor(time: try row.decode(column: "started_at", as: Int64.self), id: id)
            }
            let records = try await self.complete(entries, on: database)
            return StorePage(elements: records, next: rows.count == pageSize ? last : nil)
        }
    }

    /// See `ResultStore.counts(_:)`. Grouping and counting run in the database: over whole UTC days (no bounds,
    /// or bounds at UTC midnight) on the `wehe_daily_counts` summary, otherwise on the `wehe_tests_counts` index.
    package func counts(_ query: CountQuery) async throws(WeheStoreError) -> [CountRow] {
        var seen = Set<CountDimension>()
        let dimensions = query.groupBy.filter { seen.insert($0).inserted }
        let columns = dimensions.map { dimension -> String in
            switch dimension {
            case .provider: "t.provider"
            case .replay: "t.replay_name"
            case .verdict: "t.verdict"
            case .day: "t.started_day"
            case .networkType: "t.network_type"
            }
        }
        let fromDay = Self.wholeDay(query.from)
        let toDay = Self.wholeDay(query.to)
        let summarised = (query.from == nil || fromDay != nil) && (query.to == nil || toDay != nil)
        var conditions: SQLQueryString
        if summarised {
            conditions = ""
            if let fromDay { conditions += " AND t.started_day >= \(bind: fromDay)" }
            if let toDay { conditions += " AND t.started_day < \(bind: toDay)" }
        } else {
            conditions = Self.rangeConditions(from: query.from, to: query.to, after: nil)
        }
        if let providers = query.providers {
            conditions += providers.isEmpty ? " AND 1 = 0" : " AND t.provider IN (\(binds: providers))"
        }
        if let replays = query.replays {
            conditions += replays.isEmpty ? " AND 1 = 0" : " AND t.replay_name IN (\(binds: replays))"
        }
        if let verdicts = query.verdicts {
            conditions += verdicts.isEmpty ? " AND 1 = 0" : " AND t.verdict IN (\(binds: verdicts.map(\.rawValue)))"
        }
        let group = columns.isEmpty ? "" : " GROUP BY " + columns.joined(separator: ", ")
        let sql: SQLQueryString
        if summarised {
            // Groups emptied by later writes keep a zero row; they are not reported. One total is always.
            let select = (columns + ["CAST(COALESCE(SUM(t.tests), 0) AS BIGINT) AS n"]).joined(separator: ", ")
            let having = columns.isEmpty ? "" : " HAVING SUM(t.tests) > 0"
            sql = """
                SELECT \(unsafeRaw: select) FROM wehe_daily_counts t WHERE 1 = 1 \(conditions)\(unsafeRaw: group)\
                \(unsafeRaw: having)
                """
        } else {
            let select = (columns + ["COUNT(*) AS n"]).joined(separator: ", ")
            sql = """
                SELECT \(unsafeRaw: select) FROM wehe_tests t WHERE 1 = 1 \(conditions)\(unsafeRaw: group)
                """
        }
        let rows = try await run {
            try await self.backend.withReader { database in
                try await database.raw(sql).all().map { row in
                    CountRow(
                        provider: dimensions.contains(.provider) ? try row.optional("provider") : nil,
                        replayName: dimensions.contains(.replay) ? try row.optional("replay_name") : nil,
                        verdict: dimensions.contains(.verdict)
                            ? try row.optional("verdict", as: String.self).map { try self.verdict($0) } : nil,
                        day: dimensions.contains(.day) ? try row.optional("started_day") : nil,
                        networkType: dimensions.contains(.networkType) ? try row.optional("network_type") : nil,
                        count: try row.decode(column: "n", as: Int.self)
                    )
                }
            }
        }
        return rows.sorted(by: CountRow.storeOrder)
    }

    /// The UTC day number of `date` when it is exactly a UTC midnight (at the store's resolution).
    static func wholeDay(_ date: Date?) -> Int64? {
        guard let micros = date?.storeMicroseconds else { return nil }
        let perDay: Int64 = 86_400_000_000
        guard micros % perDay == 0 else { return nil }
        return micros / perDay
    }

    private func localizationRun(_ row: any SQLRow) throws -> LocalizationRun {
        let summaryText: String? = try row.optional("summary")
        let summary = try summaryText.map {
            try Self.jsonDecoder.decode(LocalizationSummary.self, from: Data($0.utf8))
        }
        return LocalizationRun(
            userID: try row.decode(column: "user_id", as: String.self),
            historyCounts: [
                try row.decode(column: "history_count_1", as: Int.self),
                try row.decode(column: "history_count_2", as: Int.self),
            ],
            servers: [
                try row.decode(column: "server_1", as: String.self),
                try row.decode(column: "server_2", as: String.self),
            ],
            replayName: try row.decode(column: "replay_name", as: String.self),
            singleServer: try row.optional("single_server"),
            singleHistoryCount: try row.optional("single_history_count"),
            requestedAt: try row.date("requested_at"),
            summary: summary
        )
    }

    /// See `ResultStore.localization(userID:historyCounts:)`.
    package func localization(userID: String, historyCounts: [Int]) async throws(WeheStoreError) -> LocalizationRun? {
        guard historyCounts.count == 2 else { return nil }
        return try await run {
            try await self.backend.withReader { database in
                try await database.raw(
                    """
                    SELECT * FROM wehe_localizations WHERE user_id = \(bind: userID)
                    AND history_count_1 = \(bind: historyCounts[0]) AND history_count_2 = \(bind: historyCounts[1])
                    """
                ).first().map { try self.localizationRun($0) }
            }
        }
    }

    /// See `ResultStore.localizations(userID:)`.
    package func localizations(userID: String) async throws(WeheStoreError) -> [LocalizationRun] {
        try await run {
            try await self.backend.withReader { database in
                try await database.raw(
                    """
                    SELECT * FROM wehe_localizations WHERE user_id = \(bind: userID)
                    ORDER BY requested_at DESC, history_count_1 DESC
                    """
                ).all().map { try self.localizationRun($0) }
            }
        }
    }

    /// See `ResultStore.localizationRuns(from:to:limit:)`.
    package func localizationRuns(from: Date?, to: Date?, limit: Int) async throws(WeheStoreError)
        -> [LocalizationRun]
    {
        var conditions: SQLQueryString = ""
        if let from { conditions += " AND requested_at >= \(bind: from.storeMicroseconds)" }
        if let to { conditions += " AND requested_at < \(bind: to.storeMicroseconds)" }
        let sql: SQLQueryString = """
            SELECT * FROM wehe_localizations WHERE 1 = 1 \(conditions)
            ORDER BY requested_at DESC, id DESC LIMIT \(bind: max(0, limit))
            """
        return try await run {
            try await self.backend.withReader { database in
                try await database.raw(sql).all().map { try self.localizationRun($0) }
            }
        }
    }

    /// See `ResultStore.sessionEvents(_:)`.
    package func sessionEvents(_ query: SessionEventQuery) async throws(WeheStoreError) -> [SessionEvent] {
        var conditions: SQLQueryString = ""
        if let from = query.from { conditions += " AND at >= \(bind: from.storeMicroseconds)" }
        if let to = query.to { conditions += " AND at < \(bind: to.storeMicroseconds)" }
        if let kinds = query.kinds {
            conditions += kinds.isEmpty ? " AND 1 = 0" : " AND kind IN (\(binds: kinds.map(\.rawValue)))"
        }
        let sql: SQLQueryString = """
            SELECT * FROM wehe_session_events WHERE 1 = 1 \(conditions)
            ORDER BY at DESC, id DESC LIMIT \(bind: max(0, query.limit))
            """
        return try await run {
            try await self.backend.withReader { database in
                try await database.raw(sql).all().map { row in
                    SessionEvent(
                        at: try row.date("at"),
                        kind: SessionEvent.Kind(rawValue: try row.decode(column: "kind", as: String.self)),
                        userID: try row.optional("user_id"),
                        historyCount: try row.optional("history_count"),
                        testID: try row.optional("test_index"),
                        replayName: try row.optional("replay_name"),
                        clientAddress: try row.optional("client_address"),
                        serverName: try row.optional("server_name"),
                        detail: try row.decode(column: "detail", as: String.self)
                    )
                }
            }
        }
    }

    /// See `ResultStore.sessionEventCounts(from:to:)`.
    package func sessionEventCounts(from: Date?, to: Date?) async throws(WeheStoreError) -> [SessionEventCount] {
        var conditions: SQLQueryString = ""
        if let from { conditions += " AND at >= \(bind: from.storeMicroseconds)" }
        if let to { conditions += " AND at < \(bind: to.storeMicroseconds)" }
        let sql: SQLQueryString = """
            SELECT kind, COUNT(*) AS n FROM wehe_session_events WHERE 1 = 1 \(conditions) GROUP BY kind ORDER BY kind
            """
        return try await run {
            try await self.backend.withReader { database in
                try await database.raw(sql).all().map { row in
                    SessionEventCount(
                        kind: SessionEvent.Kind(rawValue: try row.decode(column: "kind", as: String.self)),
                        count: try row.decode(column: "n", as: Int.self)
                    )
                }
            }
        }
    }
}
