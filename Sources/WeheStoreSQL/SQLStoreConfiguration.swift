package import WeheStore

/// Everything `SQLResultStore.open(configuration:logger:)` needs: which database, how to treat client addresses,
/// whether to migrate, and the sizes of pages and batches.
package struct SQLStoreConfiguration: Sendable {
    /// Which database engine and where.
    package enum Backend: Sendable {
        /// An SQLite file (the embedded default).
        case sqlite(SQLiteOptions)
        /// A PostgreSQL server shared by many replay servers.
        case postgres(PostgresOptions)
    }

    /// What to do with the schema when opening.
    package enum SchemaMode: Sendable, Hashable {
        /// Apply pending migrations (the normal start of a client or server).
        case migrate
        /// Change nothing; fail with `.migrationFailed` unless the schema is exactly the current version.
        case verify
    }

    /// Which database.
    package var backend: Backend
    /// How client addresses are kept.
    package var anonymization: AnonymizationPolicy
    /// Migrate or only verify on open.
    package var schemaMode: SchemaMode
    /// Rows per page of paged reads (`crowdTests`, `tests`).
    package var pageSize: Int
    /// Tests per multi-row `INSERT` in `save(tests:)`.
    package var batchSize: Int

    /// Creates a configuration.
    package init(
        backend: Backend,
        anonymization: AnonymizationPolicy = .default,
        schemaMode: SchemaMode = .migrate,
        pageSize: Int = 1_000,
        batchSize: Int = 400
    ) {
        self.backend = backend
        self.anonymization = anonymization
        self.schemaMode = schemaMode
        self.pageSize = max(1, pageSize)
        self.batchSize = max(1, min(batchSize, 1_000))
    }
}

/// Options of an SQLite store.
package struct SQLiteOptions: Sendable, Hashable {
    /// How hard SQLite makes each commit durable (`PRAGMA synchronous`).
    package enum Synchronous: String, Sendable, Hashable {
        /// A commit survives a process crash and a power loss (fsync of the WAL on every commit).
        case full = "FULL"
        /// A commit survives a process crash; the last commits may be lost on power loss (WAL mode).
        case normal = "NORMAL"
    }

    /// Path of the database file.
    package var path: String
    /// Create the file (and its directory) when missing; otherwise a missing file is `.notFound`.
    package var createIfMissing: Bool
    /// Open read-only (checks, exports); every write fails with `.readOnly`.
    package var readOnly: Bool
    /// How long a write waits for another process's lock before failing with `.locked`.
    package var busyTimeout: Duration
    /// Durability of commits.
    package var synchronous: Synchronous
    /// Number of read connections (WAL lets them read while the writer writes).
    package var readerCount: Int
    /// Upper bound of the file size in pages (`PRAGMA max_page_count`), `nil` for SQLite's default. A write that
    /// would grow the file beyond it fails with `.diskFull`.
    package var maximumPageCount: Int?

    /// Creates options.
    package init(
        path: String,
        createIfMissing: Bool = true,
        readOnly: Bool = false,
        busyTimeout: Duration = .seconds(5),
        synchronous: Synchronous = .full,
        readerCount: Int = 2,
        maximumPageCount: Int? = nil
    ) {
        self.path = path
        self.createIfMissing = createIfMissing
        self.readOnly = readOnly
        self.busyTimeout = busyTimeout
        self.synchronous = synchronous
        self.readerCount = max(1, readerCount)
        self.maximumPageCount = maximumPageCount
    }
}

/// Options of a PostgreSQL store.
package struct PostgresOptions: Sendable, Hashable {
    /// `postgres://user:password@host:port/database?tlsmode=disable` (or `postgres+uds://user@localhost/socket#db`).
    /// The password never appears in errors or logs.
    package var url: String
    /// Size of the connection pool.
    package var maximumConnections: Int
    /// How long to wait for a connection to be established.
    package var connectTimeout: Duration
    /// How long an operation waits for a free pooled connection.
    package var requestTimeout: Duration

    /// Creates options.
    package init(
        url: String,
        maximumConnections: Int = 8,
        connectTimeout: Duration = .seconds(5),
        requestTimeout: Duration = .seconds(10)
    ) {
        self.url = url
        self.maximumConnections = max(1, maximumConnections)
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
    }
}
