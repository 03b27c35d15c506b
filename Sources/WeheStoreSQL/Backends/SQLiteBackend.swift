internal import Foundation
internal import Logging
internal import SQLKit
internal import SQLiteKit
internal import WeheStore

/// SQLite behind `SQLResultStore`: one writer connection (SQLite allows one writer at a time) lent to one task at a
/// time, and a few read-only connections that read in parallel thanks to WAL mode.
final class SQLiteBackend: SQLBackend {
    let flavor = SQLFlavor.sqlite
    let databaseName: String
    let isReadOnly: Bool
    private let writer: ConnectionLease<SQLiteConnection>?
    private let readers: ConnectionLease<SQLiteConnection>

    private init(
        path: String,
        readOnly: Bool,
        writer: ConnectionLease<SQLiteConnection>?,
        readers: ConnectionLease<SQLiteConnection>
    ) {
        self.databaseName = path
        self.isReadOnly = readOnly
        self.writer = writer
        self.readers = readers
    }

    /// Opens (and if allowed creates) the database file and its connections.
    static func open(_ options: SQLiteOptions, logger: Logger) async throws(WeheStoreError) -> SQLiteBackend {
        let path = absolutePath(options.path)
        try checkFile(path: path, options: options)
        var opened: [SQLiteConnection] = []
        do {
            var writerConnection: SQLiteConnection?
            if !options.readOnly {
                let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
                opened.append(connection)
                let database = connection.sql(queryLogLevel: nil)
                try await configure(database, options: options)
                _ = try await database.raw("PRAGMA journal_mode = WAL").all()
                if let pages = options.maximumPageCount {
                    let pragma = "PRAGMA max_page_count = \(max(1, pages))"
                    _ = try await database.raw(SQLQueryString(pragma)).all()
                }
                writerConnection = connection
            }
            var readerConnections: [SQLiteConnection] = []
            for _ in 0..<options.readerCount {
                let connection = try await SQLiteConnection.open(
                    storage: .file(path: readOnlyURI(path)),
                    logger: logger
                )
                opened.append(connection)
                try await configure(connection.sql(queryLogLevel: nil), options: options)
                readerConnections.append(connection)
            }
            // Touch the schema so that a file that is not a database fails here, with a clear error.
            _ = try await readerConnections[0].sql(queryLogLevel: nil)
                .raw("SELECT count(*) AS n FROM sqlite_master").all()
            return SQLiteBackend(
                path: path,
                readOnly: options.readOnly,
                writer: writerConnection.map { ConnectionLease([$0]) },
                readers: ConnectionLease(readerConnections)
            )
        } catch {
            for connection in opened { try? await connection.close() }
            throw translate(error, database: path)
        }
    }

    private static func configure(_ database: any SQLDatabase, options: SQLiteOptions) async throws {
        let milliseconds =
            options.busyTimeout.components.seconds * 1000
            + options.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        let busy = "PRAGMA busy_timeout = \(max(0, milliseconds))"
        let synchronous = "PRAGMA synchronous = \(options.synchronous.rawValue)"
        _ = try await database.raw(SQLQueryString(busy)).all()
        _ = try await database.raw("PRAGMA foreign_keys = ON").all()
        _ = try await database.raw(SQLQueryString(synchronous)).all()
    }

    private static func absolutePath(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
    }

    /// `file:` URI of `path` opened read-only.
    private static func readOnlyURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(encoded)?mode=ro"
    }

    /// Checks the file before SQLite sees it, so that a missing file or directory gets a precise error.
    private static func checkFile(path: String, options: SQLiteOptions) throws(WeheStoreError) {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue {
                throw WeheStoreError(.unavailable, database: path, "the path is a directory, not a database file")
            }
            if !options.readOnly, !manager.isWritableFile(atPath: path) {
                throw WeheStoreError(.readOnly, database: path, "the database file is not writable")
            }
            let directory = (path as NSString).deletingLastPathComponent
            if !options.readOnly, !manager.isWritableFile(atPath: directory) {
                throw WeheStoreError(
                    .readOnly,
                    database: path,
                    "the directory \(directory) is not writable (SQLite needs it for its WAL and lock files)"
                )
            }
            return
        }
        guard options.createIfMissing, !options.readOnly else {
            throw WeheStoreError(.notFound, database: path, "no database file exists at this path")
        }
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw WeheStoreError(
                .unavailable,
                database: path,
                "cannot create the directory \(directory): \(error.localizedDescription)"
            )
        }
    }

    func withWriter<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard let writer else {
            throw WeheStoreError(.readOnly, database: databaseName, "the store was opened read-only")
        }
        return try await lend(from: writer, body)
    }

    func withReader<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await lend(from: readers, body)
    }

    private func lend<T: Sendable>(
        from lease: ConnectionLease<SQLiteConnection>,
        _ body: @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        guard let connection = await lease.acquire() else {
            throw WeheStoreError(.closed, database: databaseName, "the store has been closed")
        }
        do {
            let result = try await body(connection.sql(queryLogLevel: nil))
            if let toClose = await lease.release(connection) { try? await toClose.close() }
            return result
        } catch {
            if let toClose = await lease.release(connection) { try? await toClose.close() }
            throw error
        }
    }

    func integrityProblems() async throws -> [String] {
        try await withReader { database in
            var problems = try await database.raw("PRAGMA integrity_check").all().compactMap { row -> String? in
                let text = try row.decode(column: "integrity_check", as: String.self)
                return text == "ok" ? nil : text
            }
            let orphans = try await database.raw("PRAGMA foreign_key_check").all()
            if !orphans.isEmpty {
                problems.append("\(orphans.count) row(s) refer to missing parent rows (foreign_key_check)")
            }
            return problems
        }
    }

    func translate(_ error: any Error) -> WeheStoreError {
        Self.translate(error, database: databaseName)
    }

    /// Maps SQLite's result codes (primary and extended) onto store error codes.
    static func translate(_ error: any Error, database: String) -> WeheStoreError {
        if let error = error as? WeheStoreError { return error }
        guard let sqlite = error as? SQLiteError else {
            return WeheStoreError(.queryFailed, database: database, "\(error)", underlying: error)
        }
        let reason = String(describing: sqlite.reason)
        let cause = sqlite.message
        let code: WeheStoreError.Code
        let explanation: String
        switch reason {
        case let name where name.hasPrefix("busy") || name.hasPrefix("locked"):
            code = .locked
            explanation = "the database is locked by another writer"
        case let name where name.lowercased().hasPrefix("readonly"):
            code = .readOnly
            explanation = "the database is read-only"
        case let name where name.hasPrefix("corrupt") || name == "notADatabase":
            code = .corrupted
            explanation = "the file is corrupted or not an SQLite database"
        case "full":
            code = .diskFull
            explanation = "the disk or the configured size limit is full"
        case let name where name.hasPrefix("cantOpen"):
            code = .unavailable
            explanation = "the database file cannot be opened"
        case let name where name.hasPrefix("ioError"):
            code = .unavailable
            explanation = "an I/O error occurred"
        case "permission", "auth":
            code = .readOnly
            explanation = "access to the database was denied"
        case let name where name.hasPrefix("constraint"):
            code = .invalidRecord
            explanation = "a record violates a constraint"
        default:
            code = .queryFailed
            explanation = "the database reported an error"
        }
        return WeheStoreError(code, database: database, "\(explanation) (\(reason): \(cause))", underlying: error)
    }

    func close() async {
        var connections = await readers.close()
        if let writer { connections += await writer.close() }
        for connection in connections { try? await connection.close() }
    }
}
