import Foundation
import Logging
import PostgresKit
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// The three stores the behaviour suite runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// A logger that drops everything (tests check behaviour, not log lines).
let quietLogger = Logger(label: "wehe.store.tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// Creates fresh, empty stores for tests and removes them afterwards.
enum StoreHarness {
    /// The PostgreSQL server to test against (`scripts/with-postgres.sh` sets it), or `nil`.
    static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["WEHE_TEST_POSTGRES_URL"], !url.isEmpty else {
            return nil
        }
        return url
    }

    /// Why the PostgreSQL variant cannot run, printed when it is skipped.
    static let postgresSkipReason =
        "PostgreSQL variant skipped: WEHE_TEST_POSTGRES_URL is not set (run under scripts/with-postgres.sh)"

    /// Runs `body` with a fresh empty store of `kind`. For PostgreSQL without a server, prints why and returns
    /// `false` without running `body`.
    @discardableResult
    static func withStore(
        _ kind: StoreKind,
        anonymization: AnonymizationPolicy = .default,
        pageSize: Int = 1_000,
        batchSize: Int = 400,
        _ body: (any ResultStore) async throws -> Void
    ) async throws -> Bool {
        switch kind {
        case .memory:
            let store = InMemoryResultStore(anonymization: anonymization, pageSize: pageSize)
            try await body(store)
            await store.close()
        case .sqlite:
            try await withTemporaryDirectory { directory in
                let configuration = SQLStoreConfiguration(
                    backend: .sqlite(SQLiteOptions(path: directory + "/results.sqlite")),
                    anonymization: anonymization,
                    pageSize: pageSize,
                    batchSize: batchSize
                )
                let store = try await SQLResultStore.open(configuration: configuration, logger: quietLogger)
                do {
                    try await body(store)
                } catch {
                    await store.close()
                    throw error
                }
                await store.close()
            }
        case .postgres:
            guard postgresURL != nil else {
                print(postgresSkipReason)
                return false
            }
            try await withPostgresDatabase { url in
                let configuration = SQLStoreConfiguration(
                    backend: .postgres(PostgresOptions(url: url, maximumConnections: 4)),
                    anonymization: anonymization,
                    pageSize: pageSize,
                    batchSize: batchSize
                )
                let store = try await SQLResultStore.open(configuration: configuration, logger: quietLogger)
                do {
                    try await body(store)
                } catch {
                    await store.close()
                    throw error
                }
                await store.close()
            }
        }
        return true
    }

    /// Runs `body` with a new empty directory, removed afterwards.
    static func withTemporaryDirectory(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("wehe-store-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await body(directory)
    }

    /// Runs `body` with the URL of a new empty PostgreSQL database on the test server, dropped afterwards.
    static func withPostgresDatabase(_ body: (String) async throws -> Void) async throws {
        guard let adminURL = postgresURL else { return }
        let name = "wehe_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await adminSQL(adminURL, "CREATE DATABASE \(name)")
        var components = try #require(URLComponents(string: adminURL))
        components.path = "/" + name
        let url = try #require(components.string)
        do {
            try await body(url)
        } catch {
            try? await adminSQL(adminURL, "DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
        try await adminSQL(adminURL, "DROP DATABASE \(name) WITH (FORCE)")
    }

    /// Runs one statement on the server behind `url` on a connection of its own.
    static func adminSQL(_ url: String, _ statement: String) async throws {
        let configuration = try SQLPostgresConfiguration(url: url)
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(),
            configuration: configuration.coreConfiguration,
            id: 1,
            logger: quietLogger
        )
        do {
            try await connection.sql().raw(SQLQueryString(statement)).run()
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
