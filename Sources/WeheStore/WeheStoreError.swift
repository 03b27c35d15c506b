/// The error of the `WeheStore` and `WeheStoreSQL` targets: a store operation failed.
///
/// Every error names the database it concerns (a file path, or `host:port/database` for PostgreSQL, never a
/// password) and the cause. Whether to retry is the caller's decision; `isRetryable` is a hint.
package struct WeheStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The database cannot be reached or opened (server down, connection lost, directory missing).
        package static let unavailable = Code(name: "unavailable")
        /// The database is read-only (file permissions, read-only mount or a store opened read-only).
        package static let readOnly = Code(name: "readOnly")
        /// The database file is not a database or fails its integrity check.
        package static let corrupted = Code(name: "corrupted")
        /// Another writer holds the database lock longer than the configured wait.
        package static let locked = Code(name: "locked")
        /// The disk (or the configured size limit) is full.
        package static let diskFull = Code(name: "diskFull")
        /// The database, or a record the operation needs, does not exist.
        package static let notFound = Code(name: "notFound")
        /// A schema migration failed, or the schema is not the one this program expects.
        package static let migrationFailed = Code(name: "migrationFailed")
        /// The record handed to the store is malformed (for example non-finite samples).
        package static let invalidRecord = Code(name: "invalidRecord")
        /// The buffered writer's queue is full: the result was refused, not stored.
        package static let queueFull = Code(name: "queueFull")
        /// The store has been closed.
        package static let closed = Code(name: "closed")
        /// A store or policy was configured with values out of range.
        package static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// Any other failure reported by the database.
        package static let queryFailed = Code(name: "queryFailed")
        /// The name of the code.
        package var description: String { name }
    }

    /// The kind of problem.
    package var code: Code
    /// The database concerned: a file path, `host:port/database`, or `memory` for the in-memory store.
    package var database: String
    /// The cause, in words.
    package var message: String
    /// The error reported by the driver, if any.
    package var underlying: (any Error & Sendable)?

    /// Creates an error.
    package init(_ code: Code, database: String, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.database = database
        self.message = message
        self.underlying = underlying
    }

    /// Whether trying the same operation again later may succeed (connection lost, lock held, disk full).
    package var isRetryable: Bool {
        code == .unavailable || code == .locked || code == .diskFull
    }

    /// `database <name>: <code>: <message>`.
    package var description: String { "database \(database): \(code): \(message)" }

    /// Errors are equal when their codes are.
    package static func == (lhs: WeheStoreError, rhs: WeheStoreError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
