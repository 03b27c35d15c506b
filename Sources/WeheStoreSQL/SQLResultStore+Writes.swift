internal import Foundation
internal import SQLKit
internal import WeheCore
package import WeheStore

/// A value bound into a query.
typealias SQLValue = any Encodable & Sendable

extension SQLResultStore {
    static let testColumns = """
        user_id, history_count, replay_name, started_at, started_day, provider, network_type, client_version, \
        client_address, server_name, extra_string, original_mean, control_mean, verdict, direction, as_number, as_name, \
        scheduled
        """

    static func testValues(
        _ key: TestKey,
        _ metadata: TestMetadata,
        originalMean: Double?,
        controlMean: Double?,
        verdict: Verdict?,
        direction: DifferentiationDirection?
    ) -> [SQLValue] {
        [
            key.userID, key.historyCount, metadata.replayName, metadata.startedAt.storeMicroseconds,
            metadata.startedAt.storeDay, metadata.provider, metadata.networkType, metadata.clientVersion,
            metadata.clientAddress, metadata.serverName, metadata.extraString, originalMean, controlMean,
            verdict?.rawValue, direction?.rawValue, metadata.asNumber, metadata.asName,
            metadata.scheduled.map { $0 ? 1 : 0 },
        ]
    }

    static let replayColumns = """
        test_id, test_index, replay_name, received_at, sample_count, mean_mbps, samples, client_duration, \
        reached_time_limit
        """

    static func replayValues(testID: Int64, _ replay: ReplayRecord) -> [SQLValue] {
        [
            testID, replay.key.testID, replay.replayName, replay.receivedAt.storeMicroseconds, replay.samples.count,
            replay.samples.meanMbps, SampleCodec.encode(replay.samples), replay.clientDurationSeconds,
            replay.reachedTimeLimit.map { $0 ? 1 : 0 },
        ]
    }

    static let analysisColumns = """
        test_id, compared_test_index, analysed_at, verdict, direction, area_test, ks2_ratio_test, original_mean, \
        control_mean, ks_statistic, ks_p_value, area_threshold, ks_p_threshold, ks2_ratio_threshold, rule_set, note
        """

    static func analysisValues(testID: Int64, _ analysis: AnalysisRecord) -> [SQLValue] {
        let summary = analysis.summary
        return [
            testID, analysis.comparedTestID, analysis.analysedAt.storeMicroseconds, summary.verdict.rawValue,
            summary.direction?.rawValue, summary.areaTest, summary.ks2RatioTest, summary.originalMeanMbps,
            summary.controlMeanMbps, summary.ksStatistic, summary.ksPValue, summary.thresholds.area,
            summary.thresholds.ksPValue, summary.thresholds.ks2Ratio, summary.thresholds.ruleSet, summary.note,
        ]
    }

    /// `(?, ?, …), (?, ?, …)` for a multi-row `VALUES`.
    static func valueRows(_ rows: [[SQLValue]]) -> SQLQueryString {
        rows.map { "(\(binds: $0))" as SQLQueryString }.joined(separator: ", ")
    }

    static func excludedAssignments(_ columns: String, except: Set<String> = []) -> String {
        columns.split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !except.contains($0) }
            .map { "\($0) = excluded.\($0)" }
            .joined(separator: ", ")
    }

    /// See `ResultStore.save(replay:metadata:)`.
    package func save(replay: ReplayRecord, metadata: TestMetadata) async throws(WeheStoreError) {
        let replay = try replay.validated(database: databaseName)
        let metadata = metadata.prepared(by: configuration.anonymization)
        let testIndex = replay.key.testID
        // New samples invalidate only the analyses that read the replaced replay: every one for the original, the
        // comparisons with it otherwise. The test's verdict is the original against the control (testID 1). A DPI
        // probe or a confirmation replay (testID 2, 3, …) of the same test leaves both alone: dropping them made
        // every probe recompute the verdict a search is tied to, through the per-network analysis queue.
        var assignments = ["replay_name = excluded.replay_name"]
        if testIndex <= 1 {
            assignments += ["verdict = NULL", "direction = NULL"]
        }
        for column in [
            "provider", "network_type", "client_version", "client_address", "server_name", "extra_string", "as_number",
            "as_name", "scheduled",
        ] {
            assignments.append("\(column) = COALESCE(excluded.\(column), wehe_tests.\(column))")
        }
        if testIndex == 0 {
            assignments += [
                "started_at = excluded.started_at", "started_day = excluded.started_day",
                "original_mean = excluded.original_mean",
            ]
        } else if testIndex == 1 {
            assignments.append("control_mean = excluded.control_mean")
        }
        let values = Self.testValues(
            replay.key.test,
            metadata,
            originalMean: testIndex == 0 ? replay.samples.meanMbps : nil,
            controlMean: testIndex == 1 ? replay.samples.meanMbps : nil,
            verdict: nil,
            direction: nil
        )
        let replayUpdate = Self.excludedAssignments(Self.replayColumns, except: ["test_id", "test_index"])
        let upsertTest: SQLQueryString = """
            INSERT INTO wehe_tests (\(unsafeRaw: Self.testColumns)) VALUES (\(binds: values))
            ON CONFLICT (user_id, history_count) DO UPDATE SET \(unsafeRaw: assignments.joined(separator: ", "))
            RETURNING id
            """
        try await write { database in
            guard let row = try await database.raw(upsertTest).first() else {
                throw WeheStoreError(.queryFailed, database: "-", "the test row was not returned")
            }
            let testID = try row.decode(column: "id", as: Int64.self)
            if testIndex == 0 {
                try await database.raw("DELETE FROM wehe_analyses WHERE test_id = \(bind: testID)").run()
            } else {
                try await database.raw(
                    """
                    DELETE FROM wehe_analyses WHERE test_id = \(bind: testID) AND compared_test_index = \(bind: testIndex)
                    """
                ).run()
            }
            try await database.raw(
                """
                INSERT INTO wehe_replays (\(unsafeRaw: Self.replayColumns))
                VALUES (\(binds: Self.replayValues(testID: testID, replay)))
                ON CONFLICT (test_id, test_index) DO UPDATE SET \(unsafeRaw: replayUpdate)
                """
            ).run()
        }
    }

    /// See `ResultStore.save(analysis:)`.
    package func save(analysis: AnalysisRecord) async throws(WeheStoreError) {
        let analysis = try analysis.validated(database: databaseName)
        let name = databaseName
        let update = Self.excludedAssignments(Self.analysisColumns, except: ["test_id", "compared_test_index"])
        try await write { database in
            guard
                let row = try await database.raw(
                    """
                    SELECT id FROM wehe_tests
                    WHERE user_id = \(bind: analysis.test.userID)
                    AND history_count = \(bind: analysis.test.historyCount)
                    """
                ).first()
            else {
                throw WeheStoreError(.notFound, database: name, "no test \(analysis.test) to attach the analysis to")
            }
            let testID = try row.decode(column: "id", as: Int64.self)
            try await database.raw(
                """
                INSERT INTO wehe_analyses (\(unsafeRaw: Self.analysisColumns))
                VALUES (\(binds: Self.analysisValues(testID: testID, analysis)))
                ON CONFLICT (test_id, compared_test_index) DO UPDATE SET \(unsafeRaw: update)
                """
            ).run()
            if analysis.comparedTestID == 1 {
                try await database.raw(
                    """
                    UPDATE wehe_tests SET verdict = \(bind: analysis.summary.verdict.rawValue),
                    direction = \(bind: analysis.summary.direction?.rawValue) WHERE id = \(bind: testID)
                    """
                ).run()
            }
        }
    }

    /// See `ResultStore.save(tests:)`. Tests are written with multi-row statements, `batchSize` tests at a time,
    /// all in one transaction.
    package func save(tests records: [TestRecord]) async throws(WeheStoreError) {
        var latest: [TestKey: Int] = [:]
        var prepared: [TestRecord] = []
        for record in records {
            var record = try record.validated(database: databaseName)
            record.metadata = record.metadata.prepared(by: configuration.anonymization)
            if let index = latest[record.key] {
                prepared[index] = record
            } else {
                latest[record.key] = prepared.count
                prepared.append(record)
            }
        }
        guard !prepared.isEmpty else { return }
        let batches = stride(from: 0, to: prepared.count, by: configuration.batchSize).map {
            Array(prepared[$0..<min($0 + configuration.batchSize, prepared.count)])
        }
        let name = databaseName
        try await write { database in
            for batch in batches {
                try await Self.insert(batch: batch, on: database, databaseName: name)
            }
        }
    }

    private static func insert(batch: [TestRecord], on database: any SQLDatabase, databaseName: String) async throws {
        let testRows = batch.map { record in
            testValues(
                record.key,
                record.metadata,
                originalMean: record.replay(0)?.samples.meanMbps,
                controlMean: record.replay(1)?.samples.meanMbps,
                verdict: record.mainAnalysis?.summary.verdict,
                direction: record.mainAnalysis?.summary.direction
            )
        }
        let update = excludedAssignments(testColumns, except: ["user_id", "history_count"])
        let returned = try await database.raw(
            """
            INSERT INTO wehe_tests (\(unsafeRaw: testColumns)) VALUES \(valueRows(testRows))
            ON CONFLICT (user_id, history_count) DO UPDATE SET \(unsafeRaw: update)
            RETURNING id, user_id, history_count
            """
        ).all()
        var ids: [TestKey: Int64] = [:]
        for row in returned {
            let key = TestKey(
                userID: try row.decode(column: "user_id", as: String.self),
                historyCount: try row.decode(column: "history_count", as: Int.self)
            )
            ids[key] = try row.decode(column: "id", as: Int64.self)
        }
        let idList = Array(ids.values)
        try await database.raw("DELETE FROM wehe_replays WHERE test_id IN (\(binds: idList))").run()
        try await database.raw("DELETE FROM wehe_analyses WHERE test_id IN (\(binds: idList))").run()
        var replayRows: [[SQLValue]] = []
        var analysisRows: [[SQLValue]] = []
        for record in batch {
            guard let id = ids[record.key] else {
                throw WeheStoreError(.queryFailed, database: databaseName, "test \(record.key) was not returned")
            }
            replayRows += record.replays.map { replayValues(testID: id, $0) }
            analysisRows += record.analyses.map { analysisValues(testID: id, $0) }
        }
        for chunk in stride(from: 0, to: replayRows.count, by: 1_000) {
            let rows = Array(replayRows[chunk..<min(chunk + 1_000, replayRows.count)])
            try await database.raw("INSERT INTO wehe_replays (\(unsafeRaw: replayColumns)) VALUES \(valueRows(rows))")
                .run()
        }
        for chunk in stride(from: 0, to: analysisRows.count, by: 1_000) {
            let rows = Array(analysisRows[chunk..<min(chunk + 1_000, analysisRows.count)])
            try await database.raw(
                "INSERT INTO wehe_analyses (\(unsafeRaw: analysisColumns)) VALUES \(valueRows(rows))"
            ).run()
        }
        try await writeSensitive(batch, ids: ids, on: database)
    }

    /// See `ResultStore.save(localization:)`.
    package func save(localization: LocalizationRun) async throws(WeheStoreError) {
        let run = try localization.validated(database: databaseName)
        let summary: String?
        do {
            summary = try run.summary.map { String(decoding: try Self.jsonEncoder.encode($0), as: UTF8.self) }
        } catch {
            throw WeheStoreError(.invalidRecord, database: databaseName, "localization summary: \(error)")
        }
        let values: [SQLValue] = [
            run.userID, run.historyCounts[0], run.historyCounts[1], run.servers[0], run.servers[1], run.replayName,
            run.singleServer, run.singleHistoryCount, run.requestedAt.storeMicroseconds, run.summary?.verdict.rawValue,
            summary,
        ]
        let columns = """
            user_id, history_count_1, history_count_2, server_1, server_2, replay_name, single_server, \
            single_history_count, requested_at, verdict, summary
            """
        let update = Self.excludedAssignments(columns, except: ["user_id", "history_count_1", "history_count_2"])
        try await write { database in
            try await database.raw(
                """
                INSERT INTO wehe_localizations (\(unsafeRaw: columns)) VALUES (\(binds: values))
                ON CONFLICT (user_id, history_count_1, history_count_2) DO UPDATE SET \(unsafeRaw: update)
                """
            ).run()
        }
    }

    /// See `ResultStore.append(events:)`.
    package func append(events: [SessionEvent]) async throws(WeheStoreError) {
        guard !events.isEmpty else { return }
        let rows: [[SQLValue]] = events.map { event in
            let event = event.prepared(by: configuration.anonymization)
            return [
                event.at.storeMicroseconds, event.kind.rawValue, event.userID, event.historyCount, event.testID,
                event.replayName, event.clientAddress, event.serverName, event.detail,
            ]
        }
        try await write { database in
            for chunk in stride(from: 0, to: rows.count, by: 1_000) {
                let part = Array(rows[chunk..<min(chunk + 1_000, rows.count)])
                try await database.raw(
                    """
                    INSERT INTO wehe_session_events
                    (at, kind, user_id, history_count, test_index, replay_name, client_address, server_name, detail)
                    VALUES \(Self.valueRows(part))
                    """
                ).run()
            }
        }
    }

    static let jsonEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity",
            negativeInfinity: "-Infinity",
            nan: "NaN"
        )
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static let jsonDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity",
            negativeInfinity: "-Infinity",
            nan: "NaN"
        )
        return decoder
    }()
}
