package import Logging
internal import SQLKit
package import WeheStore

/// The real result store: SQLite (embedded default) or PostgreSQL (a fleet of servers sharing one database), one
/// set of queries for both.
///
/// Open it with `open(configuration:logger:)`; the schema is migrated (or verified) before it returns. Every
/// method throws `WeheStoreError` naming the database and the cause; a write that returns normally has been
/// committed.
package final class SQLResultStore: ResultStore {
    let backend: any SQLBackend
    let configuration: SQLStoreConfiguration
    let logger: Logger

    /// The database as named in errors: the file path, or `host:port/database`.
    package var databaseName: String { backend.databaseName }

    private init(backend: any SQLBackend, configuration: SQLStoreConfiguration, logger: Logger) {
        self.backend = backend
        self.configuration = configuration
        self.logger = logger
    }

    /// Opens the database, then migrates or verifies its schema.
    /// - Throws: `WeheStoreError` (`.notFound`, `.unavailable`, `.corrupted`, `.readOnly`, `.locked`,
    ///   `.migrationFailed`, `.invalidConfiguration`).
    package static func open(configuration: SQLStoreConfiguration, logger: Logger) async throws(WeheStoreError)
        -> SQLResultStore
    {
        let backend: any SQLBackend
        switch configuration.backend {
        case .sqlite(let options): backend = try await SQLiteBackend.open(options, logger: logger)
        case .postgres(let options): backend = try await PostgresBackend.open(options, logger: logger)
        }
        do {
            switch configuration.schemaMode {
            case .migrate:
                let applied = try await Migrator.migrate(backend)
                if !applied.isEmpty {
                    logger.info(
                        "database schema migrated",
                        metadata: [
                            "wehe.store.database": "\(backend.databaseName)",
                            "wehe.store.versions": "\(applied.map(String.init).joined(separator: ","))",
                        ]
                    )
                }
            case .verify:
                try await Migrator.verify(backend)
            }
        } catch {
            await backend.close()
            throw error
        }
        return SQLResultStore(backend: backend, configuration: configuration, logger: logger)
    }

    /// The schema version this program writes.
    package static var latestSchemaVersion: Int { SchemaMigrations.latestVersion }

    /// The schema version recorded in the database.
    package func schemaVersion() async throws(WeheStoreError) -> Int {
        try await run { try await Migrator.currentVersion(self.backend) }
    }

    /// Runs the engine's integrity check (SQLite `PRAGMA integrity_check` and `foreign_key_check`; for
    /// PostgreSQL a read of every table and a referential check).
    /// - Returns: the problems found; empty when the database is healthy.
    package func integrityProblems() async throws(WeheStoreError) -> [String] {
        try await run { try await self.backend.integrityProblems() }
    }

    /// See `ResultStore.close()`.
    package func close() async {
        await backend.close()
    }

    /// Runs `body`, turning any driver error into a `WeheStoreError` naming this database.
    func run<T: Sendable>(_ body: () async throws -> T) async throws(WeheStoreError) -> T {
        do {
            return try await body()
        } catch {
            throw backend.translate(error)
        }
    }

    /// Runs `body` in a write transaction.
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T)
        async throws(WeheStoreError)
        -> T
    {
        if backend.isReadOnly {
            throw WeheStoreError(.readOnly, database: databaseName, "the store was opened read-only")
        }
        let backend = self.backend
        return try await run {
            try await backend.withWriter { database in
                try await backend.transaction(on: database, begin: backend.beginWrite, body)
            }
        }
    }

    /// Runs `body` in a read snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws(WeheStoreError)
        -> T
    {
        let backend = self.backend
        return try await run {
            try await backend.withReader { database in
                try await backend.transaction(on: database, begin: backend.beginRead, body)
            }
        }
    }
}
