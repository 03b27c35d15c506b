internal import Foundation
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import PostgresKit
internal import SQLKit
internal import WeheStore

/// PostgreSQL behind `SQLResultStore`: a connection pool shared by readers and writers; many replay servers may
/// write to the same database at once.
final class PostgresBackend: SQLBackend {
    let flavor = SQLFlavor.postgres
    let databaseName: String
    let isReadOnly = false
    private let poolBox: PoolBox
    private var pool: EventLoopGroupConnectionPool<PostgresConnectionSource> { poolBox.pool }
    private let logger: Logger

    private init(name: String, pool: EventLoopGroupConnectionPool<PostgresConnectionSource>, logger: Logger) {
        self.databaseName = name
        self.poolBox = PoolBox(pool: pool)
        self.logger = logger
    }

    /// Connects and checks that the server answers.
    static func open(_ options: PostgresOptions, logger: Logger) async throws(WeheStoreError) -> PostgresBackend {
        let name = displayName(of: options.url)
        var configuration: SQLPostgresConfiguration
        do {
            configuration = try SQLPostgresConfiguration(url: options.url)
        } catch {
            throw WeheStoreError(
                .invalidConfiguration,
                database: name,
                "the PostgreSQL URL cannot be used (expected postgres://user:password@host:port/database)"
            )
        }
        configuration.coreConfiguration.options.connectTimeout = timeAmount(options.connectTimeout)
        let group = MultiThreadedEventLoopGroup.singleton
        let loops = Array(group.makeIterator()).count
        let pool = EventLoopGroupConnectionPool(
            source: PostgresConnectionSource(sqlConfiguration: configuration),
            maxConnectionsPerEventLoop: max(1, (options.maximumConnections + loops - 1) / max(1, loops)),
            requestTimeout: timeAmount(options.requestTimeout),
            logger: logger,
            on: group
        )
        let backend = PostgresBackend(name: name, pool: pool, logger: logger)
        do {
            _ = try await backend.withReader { try await $0.raw("SELECT 1 AS one").all() }
        } catch {
            await backend.close()
            throw backend.translate(error)
        }
        return backend
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let components = duration.components
        return .nanoseconds(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
    }

    /// `host:port/database` (or `unix:<socket>/database`) without user name or password.
    static func displayName(of url: String) -> String {
        guard let components = URLComponents(string: url) else { return "postgres (unparseable URL)" }
        if components.scheme?.hasSuffix("+uds") == true {
            return "unix:\(components.path)/\(components.fragment ?? "")"
        }
        let host = components.host ?? "localhost"
        let port = components.port ?? 5432
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return "\(host):\(port)/\(database)"
    }

    func withWriter<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await lend(body)
    }

    func withReader<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await lend(body)
    }

    private func lend<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let connection = try await pool.requestConnection(logger: logger).get()
        do {
            let result = try await body(connection.sql(queryLogLevel: nil))
            pool.releaseConnection(connection, logger: logger)
            return result
        } catch {
            pool.releaseConnection(connection, logger: logger)
            throw error
        }
    }

    func integrityProblems() async throws -> [String] {
        try await withReader { database in
            var problems: [String] = []
            // Reading every row of every table makes the server verify each page it reads (checksums when the
            // cluster has them) and fails on unreadable data.
            for table in SchemaMigrations.tables {
                let scan = "SELECT count(*) AS n FROM \(table)"
                _ = try await database.raw(SQLQueryString(scan)).all()
            }
            let orphans = try await database.raw(
                """
                SELECT count(*) AS n FROM wehe_replays r LEFT JOIN wehe_tests t ON t.id = r.test_id
                WHERE t.id IS NULL
                """
            ).all()
            let count = try orphans.first?.decode(column: "n", as: Int.self) ?? 0
            if count > 0 { problems.append("\(count) replay row(s) refer to missing tests") }
            return problems
        }
    }

    func translate(_ error: any Error) -> WeheStoreError {
        if let error = error as? WeheStoreError { return error }
        if let psql = error as? PSQLError {
            if let state = psql.serverInfo?[.sqlState] {
                let message = psql.serverInfo?[.message] ?? "no message"
                return WeheStoreError(
                    Self.code(forSQLState: state),
                    database: databaseName,
                    "PostgreSQL error \(state): \(message)",
                    underlying: error
                )
            }
            let cause = psql.underlying.map { " (\(String(describing: $0)))" } ?? ""
            return WeheStoreError(
                Self.code(forClientError: psql.code),
                database: databaseName,
                "PostgreSQL connection problem: \(psql.code)\(cause)",
                underlying: error
            )
        }
        if error is ConnectionPoolTimeoutError {
            return WeheStoreError(
                .unavailable,
                database: databaseName,
                "no pooled connection became free in time (server slow or away)",
                underlying: error
            )
        }
        if let pool = error as? ConnectionPoolError {
            return WeheStoreError(.closed, database: databaseName, "connection pool: \(pool)", underlying: error)
        }
        if error is IOError || error is ChannelError || error is NIOConnectionError {
            return WeheStoreError(
                .unavailable,
                database: databaseName,
                "cannot reach the PostgreSQL server: \(error)",
                underlying: error
            )
        }
        return WeheStoreError(.queryFailed, database: databaseName, "\(error)", underlying: error)
    }

    private static func code(forSQLState state: String) -> WeheStoreError.Code {
        switch state {
        case "53100": return .diskFull
        case "25006": return .readOnly
        case "55P03", "40P01", "40001": return .locked
        case "3D000": return .notFound
        case "XX001", "XX002": return .corrupted
        default: break
        }
        switch state.prefix(2) {
        case "08", "57", "53", "28": return .unavailable
        case "23", "22": return .invalidRecord
        default: return .queryFailed
        }
    }

    private static func code(forClientError code: PSQLError.Code) -> WeheStoreError.Code {
        switch code {
        case .poolClosed: return .closed
        case .tooManyParameters: return .queryFailed
        default: return .unavailable
        }
    }

    func close() async {
        try? await pool.shutdownAsync()
    }
}

/// The async-kit pool guards its state with a lock and is safe to share between tasks; it predates `Sendable`.
private struct PoolBox: @unchecked Sendable {
    let pool: EventLoopGroupConnectionPool<PostgresConnectionSource>
}
