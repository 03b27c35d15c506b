internal import Foundation
internal import SQLKit
internal import WeheStore

/// Applies or verifies `SchemaMigrations` on a backend.
enum Migrator {
    /// Key of the PostgreSQL advisory lock that serialises migrations of servers starting together.
    private static let advisoryLockKey = 7_240_311_2024

    private static let createVersionTable = """
        CREATE TABLE IF NOT EXISTS wehe_schema_migrations (
            version BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at BIGINT NOT NULL
        )
        """

    /// The schema version recorded in the database (0 for an empty database).
    static func currentVersion(_ backend: any SQLBackend) async throws -> Int {
        try await backend.withReader { database in
            try await version(on: database, flavor: backend.flavor)
        }
    }

    private static func version(on database: any SQLDatabase, flavor: SQLFlavor) async throws -> Int {
        let exists: Bool
        switch flavor {
        case .sqlite:
            exists = try await !database.raw(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'wehe_schema_migrations'"
            ).all().isEmpty
        case .postgres:
            exists = try await !database.raw(
                """
                SELECT table_name FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_name = 'wehe_schema_migrations'
                """
            ).all().isEmpty
        }
        guard exists else { return 0 }
        let row = try await database.raw("SELECT COALESCE(MAX(version), 0) AS version FROM wehe_schema_migrations")
            .first()
        return try row?.decode(column: "version", as: Int.self) ?? 0
    }

    /// Applies pending migrations.
    /// - Returns: the versions applied.
    static func migrate(_ backend: any SQLBackend) async throws(WeheStoreError) -> [Int] {
        let name = backend.databaseName
        do {
            return try await backend.withWriter { database in
                try await backend.transaction(on: database, begin: backend.beginWrite) { database in
                    if backend.flavor == .postgres {
                        _ = try await database.raw("SELECT pg_advisory_xact_lock(\(literal: advisoryLockKey))").all()
                    }
                    try await database.raw(SQLQueryString(createVersionTable)).run()
                    let current = try await version(on: database, flavor: backend.flavor)
                    guard current <= SchemaMigrations.latestVersion else {
                        throw WeheStoreError(
                            .migrationFailed,
                            database: name,
                            "the schema is at version \(current), newer than this program's "
                                + "\(SchemaMigrations.latestVersion); use a newer wehe"
                        )
                    }
                    var applied: [Int] = []
                    for migration in SchemaMigrations.all where migration.version > current {
                        for statement in migration.statements(backend.flavor) {
                            try await database.raw(SQLQueryString(statement)).run()
                        }
                        try await database.raw(
                            """
                            INSERT INTO wehe_schema_migrations (version, name, applied_at)
                            VALUES (\(bind: migration.version), \(bind: migration.name), \
                            \(bind: Date().storeMicroseconds))
                            """
                        ).run()
                        applied.append(migration.version)
                    }
                    return applied
                }
            }
        } catch let error as WeheStoreError where error.code == .migrationFailed || error.code == .readOnly {
            throw error
        } catch {
            let translated = backend.translate(error)
            if translated.isRetryable || translated.code == .corrupted || translated.code == .closed {
                throw translated
            }
            throw WeheStoreError(
                .migrationFailed,
                database: name,
                "applying the schema failed: \(translated.message)",
                underlying: error
            )
        }
    }

    /// Fails unless the schema is at the latest version.
    static func verify(_ backend: any SQLBackend) async throws(WeheStoreError) {
        let current: Int
        do {
            current = try await currentVersion(backend)
        } catch {
            throw backend.translate(error)
        }
        guard current == SchemaMigrations.latestVersion else {
            let advice = current < SchemaMigrations.latestVersion ? "run `wehe-server db migrate`" : "use a newer wehe"
            throw WeheStoreError(
                .migrationFailed,
                database: backend.databaseName,
                "the schema is at version \(current), this program needs \(SchemaMigrations.latestVersion); \(advice)"
            )
        }
    }
}
