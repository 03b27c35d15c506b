internal import Foundation
internal import SQLKit
package import WeheCore
package import WeheStore

extension SQLResultStore {
    /// See `ResultStore.save(loss:)`.
    package func save(loss: ReplayLossRecord) async throws(WeheStoreError) {
        let record = try loss.validated(database: databaseName)
        let values: [SQLValue] = [
            record.key.userID, record.key.historyCount, record.key.testID, record.source.rawValue,
            record.recordedAt.storeMicroseconds, record.minimumRTT, record.duration, record.samples.count,
            LossCodec.encode(record.samples),
        ]
        let columns = """
            user_id, history_count, test_index, source, recorded_at, min_rtt, duration, sample_count, samples
            """
        let update = Self.excludedAssignments(columns, except: ["user_id", "history_count", "test_index"])
        try await write { database in
            try await database.raw(
                """
                INSERT INTO wehe_replay_losses (\(unsafeRaw: columns)) VALUES (\(binds: values))
                ON CONFLICT (user_id, history_count, test_index) DO UPDATE SET \(unsafeRaw: update)
                """
            ).run()
        }
    }

    /// See `ResultStore.loss(_:)`.
    package func loss(_ key: ReplayKey) async throws(WeheStoreError) -> ReplayLossRecord? {
        let name = databaseName
        return try await run {
            try await self.backend.withReader { database in
                guard
                    let row = try await database.raw(
                        """
                        SELECT * FROM wehe_replay_losses WHERE user_id = \(bind: key.userID)
                        AND history_count = \(bind: key.historyCount) AND test_index = \(bind: key.testID)
                        """
                    ).first()
                else { return nil }
                let sourceText = try row.decode(column: "source", as: String.self)
                guard let source = ReplayLossRecord.Source(rawValue: sourceText) else {
                    throw WeheStoreError(.corrupted, database: name, "unknown loss source \"\(sourceText)\"")
                }
                guard let samples = LossCodec.decode(try row.decode(column: "samples", as: Data.self)) else {
                    throw WeheStoreError(.corrupted, database: name, "the loss timeline of \(key) is malformed")
                }
                return ReplayLossRecord(
                    key: key, source: source, recordedAt: try row.date("recorded_at"),
                    minimumRTT: try row.optional("min_rtt"),
                    duration: try row.decode(column: "duration", as: Double.self),
                    samples: samples)
            }
        }
    }
}
