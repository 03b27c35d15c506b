internal import Foundation
internal import SQLKit
internal import WeheStore

/// The two SQL engines; DDL and error codes differ, queries do not.
enum SQLFlavor: Sendable {
    case sqlite
    case postgres
}

/// A connection source for `SQLResultStore`: hands out a writer session (serialised for SQLite, pooled for
/// PostgreSQL) and reader sessions, and turns driver errors into `WeheStoreError`.
protocol SQLBackend: Sendable {
    /// The engine.
    var flavor: SQLFlavor { get }
    /// The database as named in errors.
    var databaseName: String { get }
    /// Whether every write must be refused with `.readOnly`.
    var isReadOnly: Bool { get }
    /// Runs `body` with a connection that may write; the caller brackets its transaction.
    func withWriter<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// Runs `body` with a connection for reading.
    func withReader<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// The engine's integrity check; the problems found (empty when healthy).
    func integrityProblems() async throws -> [String]
    /// Turns any error from the driver into a store error naming the database.
    func translate(_ error: any Error) -> WeheStoreError
    /// Closes every connection.
    func close() async
}

extension SQLBackend {
    /// `BEGIN` for a write transaction (SQLite takes the write lock at once).
    var beginWrite: String { flavor == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN" }
    /// `BEGIN` for a consistent read snapshot.
    var beginRead: String { flavor == .sqlite ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" }

    /// Runs `body` in a transaction on `database`, rolling back when it throws.
    func transaction<T: Sendable>(
        on database: any SQLDatabase,
        begin: String,
        _ body: @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await database.raw(SQLQueryString(begin)).run()
        do {
            let result = try await body(database)
            try await database.raw("COMMIT").run()
            return result
        } catch {
            try? await database.raw("ROLLBACK").run()
            throw error
        }
    }
}

/// A fixed set of connections lent out one task at a time.
actor ConnectionLease<Connection: Sendable> {
    private var available: [Connection]
    private var waiters: [CheckedContinuation<Connection?, Never>] = []
    private var closed = false

    init(_ connections: [Connection]) {
        self.available = connections
    }

    /// A connection, waiting for one to be returned if all are lent; `nil` once closed.
    func acquire() async -> Connection? {
        if closed { return nil }
        if let connection = available.popLast() { return connection }
        return await withCheckedContinuation { waiters.append($0) }
    }

    /// Returns a connection; gives it back to the caller for closing when the lease is closed.
    func release(_ connection: Connection) -> Connection? {
        if closed { return connection }
        if !waiters.isEmpty {
            waiters.removeFirst().resume(returning: connection)
            return nil
        }
        available.append(connection)
        return nil
    }

    /// Closes the lease: waiting tasks get `nil`; returns the idle connections for closing.
    func close() -> [Connection] {
        closed = true
        for waiter in waiters { waiter.resume(returning: nil) }
        waiters.removeAll()
        defer { available.removeAll() }
        return available
    }
}
