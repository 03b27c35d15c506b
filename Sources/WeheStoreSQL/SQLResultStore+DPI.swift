internal import Foundation
internal import SQLKit
package import WeheStore

extension SQLResultStore {
    /// See `ResultStore.dpiSearch(_:)`.
    package func dpiSearch(_ id: DPISearchID) async throws(WeheStoreError) -> DPISearchRecord? {
        try await read { database in
            guard
                let row = try await database.raw(
                    """
                    SELECT * FROM wehe_dpi_searches WHERE user_id = \(bind: id.userID)
                    AND carrier_name = \(bind: id.carrierName) AND replay_name = \(bind: id.replayName)
                    """
                ).first()
            else { return nil }
            return DPISearchRecord(
                id: id, historyCount: try row.decode(column: "history_count", as: Int.self),
                startedAt: try row.date("started_at"), updatedAt: try row.date("updated_at"),
                probes: try row.decode(column: "probes", as: Int.self),
                bytesUsed: try row.decode(column: "bytes_used", as: Int.self),
                state: try row.decode(column: "state", as: String.self))
        }
    }

    /// See `ResultStore.save(dpiSearch:)`.
    package func save(dpiSearch record: DPISearchRecord) async throws(WeheStoreError) {
        let values: [SQLValue] = [
            record.id.userID, record.id.carrierName, record.id.replayName, record.historyCount,
            record.startedAt.storeMicroseconds, record.updatedAt.storeMicroseconds, record.probes, record.bytesUsed,
            record.state,
        ]
        let columns = """
            user_id, carrier_name, replay_name, history_count, started_at, updated_at, probes, bytes_used, state
            """
        let update = Self.excludedAssignments(columns, except: ["user_id", "carrier_name", "replay_name"])
        try await write { database in
            try await database.raw(
                """
                INSERT INTO wehe_dpi_searches (\(unsafeRaw: columns)) VALUES (\(binds: values))
                ON CONFLICT (user_id, carrier_name, replay_name) DO UPDATE SET \(unsafeRaw: update)
                """
            ).run()
        }
    }

    /// See `ResultStore.deleteDPISearch(_:)`.
    package func deleteDPISearch(_ id: DPISearchID) async throws(WeheStoreError) -> Bool {
        try await write { database in
            let found = try await database.raw(
                """
                SELECT 1 AS found FROM wehe_dpi_searches WHERE user_id = \(bind: id.userID)
                AND carrier_name = \(bind: id.carrierName) AND replay_name = \(bind: id.replayName)
                """
            ).first()
            guard found != nil else { return false }
            try await Self.deleteSearch(id, on: database)
            return true
        }
    }

    private static func deleteSearch(_ id: DPISearchID, on database: any SQLDatabase) async throws {
        try await database.raw(
            """
            DELETE FROM wehe_dpi_searches WHERE user_id = \(bind: id.userID)
            AND carrier_name = \(bind: id.carrierName) AND replay_name = \(bind: id.replayName)
            """
        ).run()
    }

    /// See `ResultStore.finish(dpiSearch:)`.
    package func finish(dpiSearch result: DPIResultRecord) async throws(WeheStoreError) {
        let values: [SQLValue] = [
            result.id.userID, result.id.carrierName, result.id.replayName, result.historyCount,
            result.startedAt.storeMicroseconds, result.finishedAt.storeMicroseconds, result.probes, result.bytesUsed,
            result.outcome, result.message, DPIResultRecord.encodeRules(result.rules),
        ]
        let columns = """
            user_id, carrier_name, replay_name, history_count, started_at, finished_at, probes, bytes_used, outcome, \
            message, rules
            """
        try await write { database in
            try await Self.deleteSearch(result.id, on: database)
            try await database.raw("INSERT INTO wehe_dpi_results (\(unsafeRaw: columns)) VALUES (\(binds: values))")
                .run()
        }
    }

    /// See `ResultStore.dpiResults(_:)`.
    package func dpiResults(_ query: DPIResultQuery) async throws(WeheStoreError) -> [DPIResultRecord] {
        let name = databaseName
        return try await read { database in
            var conditions = SQLQueryString("1 = 1")
            if let userID = query.userID { conditions += " AND user_id = \(bind: userID)" }
            if let carrier = query.carrierName { conditions += " AND carrier_name = \(bind: carrier)" }
            if let replay = query.replayName { conditions += " AND replay_name = \(bind: replay)" }
            if let count = query.historyCount { conditions += " AND history_count = \(bind: count)" }
            if query.rulesOnly { conditions += " AND outcome = 'rule'" }
            let rows = try await database.raw(
                """
                SELECT * FROM wehe_dpi_results WHERE \(conditions)
                ORDER BY finished_at DESC, id DESC LIMIT \(bind: max(0, query.limit))
                """
            ).all()
            return try rows.map { row in
                let rulesText = try row.decode(column: "rules", as: String.self)
                guard let rules = DPIResultRecord.decodeRules(rulesText) else {
                    throw WeheStoreError(.corrupted, database: name, "a DPI result's rules are not valid JSON")
                }
                return DPIResultRecord(
                    id: DPISearchID(
                        userID: try row.decode(column: "user_id", as: String.self),
                        carrierName: try row.decode(column: "carrier_name", as: String.self),
                        replayName: try row.decode(column: "replay_name", as: String.self)),
                    historyCount: try row.decode(column: "history_count", as: Int.self),
                    startedAt: try row.date("started_at"), finishedAt: try row.date("finished_at"),
                    probes: try row.decode(column: "probes", as: Int.self),
                    bytesUsed: try row.decode(column: "bytes_used", as: Int.self),
                    outcome: try row.decode(column: "outcome", as: String.self),
                    message: try row.decode(column: "message", as: String.self), rules: rules)
            }
        }
    }
}
