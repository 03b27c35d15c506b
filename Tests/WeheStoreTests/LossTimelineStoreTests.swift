import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// The per-replay loss timelines of the WeHeY loss-correlation test: storage on every backend, the blob codec, and
/// the migration that adds them to databases written by the previous schema.
@Suite("Loss timelines in the store")
struct LossTimelineStoreTests {
    static func record(_ key: ReplayKey, readings: Int, lossEvery: Int = 7) -> ReplayLossRecord {
        let samples = (1...readings).map { index in
            ReplayLossRecord.Sample(
                time: Double(index) * 0.01, bytesSent: Double(1448 * (index % 5 + 1)),
                bytesLost: index % lossEvery == 0 ? 1448 : 0)
        }
        return ReplayLossRecord(
            key: key, recordedAt: Fixtures.date(3), minimumRTT: 0.0213, duration: Double(readings) * 0.01,
            samples: samples)
    }

    @Test(
        "a timeline is stored before its test exists, reads back exactly and is replaced by key",
        arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = ReplayKey(userID: "@loss0001", historyCount: 4, testID: 0)
            #expect(try await store.loss(key) == nil)
            var first = Self.record(key, readings: 500)
            try await store.save(loss: first)
            first.recordedAt = first.recordedAt.storeRounded
            #expect(try await store.loss(key) == first)
            #expect(try await store.loss(ReplayKey(userID: "@loss0001", historyCount: 4, testID: 1)) == nil)
            var second = Self.record(key, readings: 20, lossEvery: 3)
            second.minimumRTT = nil
            try await store.save(loss: second)
            second.recordedAt = second.recordedAt.storeRounded
            #expect(try await store.loss(key) == second)
        }
    }

    @Test("malformed timelines are refused as invalid records", arguments: StoreKind.allCases)
    func refused(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = ReplayKey(userID: "@loss0002", historyCount: 1, testID: 0)
            var lostMore = Self.record(key, readings: 3)
            lostMore.samples[1].bytesLost = lostMore.samples[1].bytesSent + 1
            var backwards = Self.record(key, readings: 3)
            backwards.samples[2].time = 0
            var badRTT = Self.record(key, readings: 3)
            badRTT.minimumRTT = 0
            var badKey = Self.record(key, readings: 3)
            badKey.key.historyCount = -1
            for bad in [lostMore, backwards, badRTT, badKey] {
                let error = await #expect(throws: WeheStoreError.self) { try await store.save(loss: bad) }
                #expect(error?.code == .invalidRecord)
            }
            let stored = try await store.loss(key)
            #expect(stored == nil)
        }
    }

    @Test("the loss blob round-trips bit for bit and rejects wrong tags and lengths")
    func codec() throws {
        let samples = Self.record(ReplayKey(userID: "@c", historyCount: 0, testID: 0), readings: 9).samples
        let blob = LossCodec.encode(samples)
        #expect(blob.count == 5 + 9 * 24)
        #expect(LossCodec.decode(blob) == samples)
        #expect(LossCodec.decode(LossCodec.encode([])) == [])
        #expect(LossCodec.decode(blob.dropLast()) == nil)
        var wrongTag = blob
        wrongTag[wrongTag.startIndex] = 9
        #expect(LossCodec.decode(wrongTag) == nil)
        #expect(LossCodec.decode(Data()) == nil)
    }

    /// Saves a test, rolls the database back to schema version 1 with `downgrade`, reopens it and checks that the
    /// test survived and that timelines can be stored.
    static func checkMigration(
        open: (SQLStoreConfiguration.SchemaMode) async throws -> SQLResultStore,
        dropLaterVersions: [String],
        downgrade: ([String]) async throws -> Void
    ) async throws {
        let record = Fixtures.test(count: 1, at: 0, verdict: .differentiation)
        let first = try await open(.migrate)
        try await first.save(test: record)
        await first.close()
        try await downgrade(
            dropLaterVersions + [
                "DROP TABLE wehe_replay_losses", "DELETE FROM wehe_schema_migrations WHERE version > 1",
            ])
        let verifyError = await #expect(throws: WeheStoreError.self) { _ = try await open(.verify) }
        #expect(verifyError?.code == .migrationFailed)
        let migrated = try await open(.migrate)
        #expect(try await migrated.schemaVersion() == SQLResultStore.latestSchemaVersion)
        #expect(SQLResultStore.latestSchemaVersion >= 2)
        #expect(try await migrated.test(record.key) == Fixtures.stored(record))
        let key = ReplayKey(userID: record.key.userID, historyCount: record.key.historyCount, testID: 0)
        try await migrated.save(loss: Self.record(key, readings: 30))
        #expect(try await migrated.loss(key)?.samples.count == 30)
        await migrated.close()
    }

    @Test("a SQLite database of schema version 1 keeps its tests and gains the loss table when opened")
    func sqliteMigration() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/results.sqlite"
            try await Self.checkMigration(
                open: { mode in try await SQLiteFailureTests.open(path, schemaMode: mode) },
                dropLaterVersions: [
                    "DROP TRIGGER wehe_daily_counts_insert", "DROP TRIGGER wehe_daily_counts_update",
                    "DROP TRIGGER wehe_daily_counts_delete", "DROP TABLE wehe_daily_counts",
                    "DROP INDEX wehe_localizations_requested", "DROP TABLE wehe_dpi_searches",
                    "DROP TABLE wehe_dpi_results", "ALTER TABLE wehe_tests DROP COLUMN sensitive",
                    "ALTER TABLE wehe_replays DROP COLUMN reached_time_limit",
                    "ALTER TABLE wehe_tests DROP COLUMN as_number", "ALTER TABLE wehe_tests DROP COLUMN as_name",
                    "ALTER TABLE wehe_tests DROP COLUMN scheduled",
                ],
                downgrade: { statements in try await SQLiteFailureTests.raw(path, statements) })
        }
    }

    @Test(
        "a PostgreSQL database of schema version 1 keeps its tests and gains the loss table when opened",
        .enabled(if: StoreHarness.postgresURL != nil, "needs WEHE_TEST_POSTGRES_URL (scripts/with-postgres.sh)"))
    func postgresMigration() async throws {
        try await StoreHarness.withPostgresDatabase { url in
            try await Self.checkMigration(
                open: { mode in
                    try await SQLResultStore.open(
                        configuration: SQLStoreConfiguration(
                            backend: .postgres(PostgresOptions(url: url, maximumConnections: 2)), schemaMode: mode),
                        logger: quietLogger)
                },
                dropLaterVersions: [
                    "DROP TRIGGER wehe_daily_counts_change ON wehe_tests", "DROP FUNCTION wehe_daily_counts_change()",
                    "DROP TABLE wehe_daily_counts", "DROP INDEX wehe_localizations_requested",
                    "DROP TABLE wehe_dpi_searches",
                    "DROP TABLE wehe_dpi_results", "ALTER TABLE wehe_tests DROP COLUMN sensitive",
                    "ALTER TABLE wehe_replays DROP COLUMN reached_time_limit",
                    "ALTER TABLE wehe_tests DROP COLUMN as_number", "ALTER TABLE wehe_tests DROP COLUMN as_name",
                    "ALTER TABLE wehe_tests DROP COLUMN scheduled",
                ],
                downgrade: { statements in
                    for statement in statements { try await StoreHarness.adminSQL(url, statement) }
                })
        }
    }
}
