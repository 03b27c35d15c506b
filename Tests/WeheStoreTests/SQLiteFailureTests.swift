import Foundation
import SQLiteKit
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// SQLite under bad conditions: every failure is a `WeheStoreError` naming the file and the cause, and nothing
/// already written is lost.
@Suite("SQLite store failures")
struct SQLiteFailureTests {
    static func open(
        _ path: String,
        createIfMissing: Bool = true,
        readOnly: Bool = false,
        busyTimeout: Duration = .seconds(5),
        maximumPageCount: Int? = nil,
        schemaMode: SQLStoreConfiguration.SchemaMode = .migrate
    ) async throws(WeheStoreError) -> SQLResultStore {
        let options = SQLiteOptions(
            path: path,
            createIfMissing: createIfMissing,
            readOnly: readOnly,
            busyTimeout: busyTimeout,
            maximumPageCount: maximumPageCount
        )
        return try await SQLResultStore.open(
            configuration: SQLStoreConfiguration(backend: .sqlite(options), schemaMode: schemaMode),
            logger: quietLogger
        )
    }

    /// Runs raw SQL on a connection of its own.
    static func raw(_ path: String, _ statements: [String]) async throws {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        for statement in statements { _ = try await connection.query(statement) }
        try await connection.close()
    }

    @Test("data and schema version survive closing and reopening; migrations are not applied twice")
    func reopen() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/nested/dir/results.sqlite"
            let record = Fixtures.test(count: 1, at: 0, verdict: .differentiation)
            let first = try await Self.open(path)
            try await first.save(test: record)
            await first.close()
            let second = try await Self.open(path)
            #expect(try await second.test(record.key) == Fixtures.stored(record))
            #expect(try await second.schemaVersion() == SQLResultStore.latestSchemaVersion)
            #expect(try await second.integrityProblems().isEmpty)
            await second.close()
            let rows = try await Self.count(path, "SELECT count(*) FROM wehe_schema_migrations")
            #expect(rows == SQLResultStore.latestSchemaVersion)
            let mode = try await Self.text(path, "PRAGMA journal_mode")
            #expect(mode == "wal")
        }
    }

    static func count(_ path: String, _ sql: String) async throws -> Int {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await connection.query(sql)
        try await connection.close()
        return rows.first?.column(rows.first?.columns.first?.name ?? "")?.integer ?? -1
    }

    static func text(_ path: String, _ sql: String) async throws -> String? {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await connection.query(sql)
        try await connection.close()
        return rows.first?.column(rows.first?.columns.first?.name ?? "")?.string
    }

    @Test("a missing database file is reported as not found when it may not be created")
    func missingFile() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/absent.sqlite"
            for readOnly in [false, true] {
                let error = await #expect(throws: WeheStoreError.self) {
                    _ = try await Self.open(path, createIfMissing: false, readOnly: readOnly)
                }
                #expect(error?.code == .notFound)
                #expect(error?.database == path)
                #expect(error?.description.contains(path) == true)
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("a path that cannot hold a database is reported as unavailable, naming the path")
    func unusablePath() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let blocker = directory + "/file"
            #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
            let error = await #expect(throws: WeheStoreError.self) {
                _ = try await Self.open(blocker + "/results.sqlite")
            }
            #expect(error?.code == .unavailable)
            #expect(error?.database == blocker + "/results.sqlite")
            let directoryError = await #expect(throws: WeheStoreError.self) {
                _ = try await Self.open(directory)
            }
            #expect(directoryError?.code == .unavailable)
            #expect(directoryError?.message.contains("directory") == true)
        }
    }

    @Test("a file that is not a database is reported as corrupted")
    func garbageFile() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/garbage.sqlite"
            let garbage = Data(String(repeating: "this is not an SQLite database. ", count: 512).utf8)
            #expect(FileManager.default.createFile(atPath: path, contents: garbage))
            for readOnly in [false, true] {
                let error = await #expect(throws: WeheStoreError.self) {
                    _ = try await Self.open(path, readOnly: readOnly, schemaMode: readOnly ? .verify : .migrate)
                }
                #expect(error?.code == .corrupted)
                #expect(error?.database == path)
            }
        }
    }

    @Test("damaged pages are found by open, reads or the integrity check")
    func damagedPages() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/damaged.sqlite"
            let store = try await Self.open(path)
            try await store.save(
                tests: (0..<300).map { Fixtures.test(count: $0, at: Double($0), verdict: .noDifferentiation) })
            await store.close()
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            let size = try handle.seekToEnd()
            #expect(size > 40_000)
            var generator = SeededGenerator(seed: 99)
            for offset in stride(from: UInt64(8_192), to: size - 4_096, by: 12_288) {
                try handle.seek(toOffset: offset)
                handle.write(Data((0..<2_048).map { _ in UInt8.random(in: 0...255, using: &generator) }))
            }
            try handle.close()

            var detected: [String] = []
            do {
                let reopened = try await Self.open(path, readOnly: true, schemaMode: .verify)
                do {
                    let problems = try await reopened.integrityProblems()
                    if !problems.isEmpty { detected.append("integrity check: \(problems.count) problems") }
                } catch let error as WeheStoreError {
                    #expect(error.code == .corrupted)
                    #expect(error.database == path)
                    detected.append("check failed: \(error.code)")
                }
                await reopened.close()
            } catch let error as WeheStoreError {
                #expect(error.code == .corrupted)
                #expect(error.database == path)
                detected.append("open failed: \(error.code)")
            }
            #expect(!detected.isEmpty)
        }
    }

    @Test("a write while another process holds the lock fails as locked after the wait, then succeeds")
    func locked() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/locked.sqlite"
            let store = try await Self.open(path, busyTimeout: .milliseconds(150))
            let first = Fixtures.test(count: 1, at: 0)
            try await store.save(test: first)
            let holder = try await SQLiteConnection.open(storage: .file(path: path))
            _ = try await holder.query("BEGIN EXCLUSIVE")
            _ = try await holder.query("INSERT INTO wehe_session_events (at, kind, detail) VALUES (1, 'x', 'held')")
            let error = await #expect(throws: WeheStoreError.self) {
                try await store.save(test: Fixtures.test(count: 2, at: 1))
            }
            #expect(error?.code == .locked)
            #expect(error?.isRetryable == true)
            #expect(error?.database == path)
            #expect(error?.message.contains("locked") == true)
            // Readers are not blocked by the writer's lock (WAL).
            #expect(try await store.test(first.key) == Fixtures.stored(first))
            _ = try await holder.query("ROLLBACK")
            try await holder.close()
            try await store.save(test: Fixtures.test(count: 2, at: 1))
            #expect(try await store.counts(CountQuery(groupBy: [])) == [CountRow(count: 2)])
            await store.close()
        }
    }

    @Test("a store opened read-only refuses writes and still reads")
    func readOnly() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/ro.sqlite"
            let writer = try await Self.open(path)
            let record = Fixtures.test(count: 4, at: 0)
            try await writer.save(test: record)
            await writer.close()
            let store = try await Self.open(path, readOnly: true, schemaMode: .verify)
            #expect(try await store.test(record.key) == Fixtures.stored(record))
            let error = await #expect(throws: WeheStoreError.self) {
                try await store.append(event: SessionEvent(at: Date(), kind: .error, detail: "x"))
            }
            #expect(error?.code == .readOnly)
            #expect(error?.database == path)
            await store.close()
        }
    }

    @Test(
        "a database file without write permission is reported as read-only",
        .enabled(if: getuid() != 0, "root ignores file permissions"))
    func readOnlyFile() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/perm.sqlite"
            let writer = try await Self.open(path)
            await writer.close()
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
            let error = await #expect(throws: WeheStoreError.self) { _ = try await Self.open(path) }
            #expect(error?.code == .readOnly)
            #expect(error?.database == path)
        }
    }

    @Test("a full disk (here: the configured size limit) fails as disk full and keeps what was written")
    func diskFull() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/full.sqlite"
            let store = try await Self.open(path, maximumPageCount: 40)
            var written: [TestRecord] = []
            var failure: WeheStoreError?
            for index in 0..<400 {
                let record = Fixtures.test(count: index, at: Double(index), samples: 100)
                do {
                    try await store.save(test: record)
                    written.append(record)
                } catch let error as WeheStoreError {
                    failure = error
                    break
                }
            }
            let error = try #require(failure)
            #expect(error.code == .diskFull)
            #expect(error.database == path)
            #expect(!written.isEmpty)
            for record in written { #expect(try await store.test(record.key) == Fixtures.stored(record)) }
            #expect(try await store.integrityProblems().isEmpty)
            await store.close()
        }
    }

    @Test("a schema newer than this program, or an unmigrated database in verify mode, is a migration failure")
    func schemaVersions() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let empty = directory + "/empty.sqlite"
            try await Self.raw(empty, ["CREATE TABLE unrelated (x INTEGER)"])
            let verifyError = await #expect(throws: WeheStoreError.self) {
                _ = try await Self.open(empty, schemaMode: .verify)
            }
            #expect(verifyError?.code == .migrationFailed)
            #expect(verifyError?.message.contains("wehe-server db migrate") == true)

            let newer = directory + "/newer.sqlite"
            let store = try await Self.open(newer)
            await store.close()
            try await Self.raw(
                newer, ["INSERT INTO wehe_schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)"])
            let newerError = await #expect(throws: WeheStoreError.self) { _ = try await Self.open(newer) }
            #expect(newerError?.code == .migrationFailed)
            #expect(newerError?.message.contains("99") == true)
            #expect(newerError?.database == newer)
        }
    }
}
