import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// PostgreSQL under bad conditions: unreachable, missing database, bad URL, server connections killed mid-run.
@Suite("PostgreSQL store failures")
struct PostgresFailureTests {
    static func open(_ url: String, connectTimeout: Duration = .seconds(5)) async throws(WeheStoreError)
        -> SQLResultStore
    {
        try await SQLResultStore.open(
            configuration: SQLStoreConfiguration(
                backend: .postgres(PostgresOptions(url: url, maximumConnections: 2, connectTimeout: connectTimeout))
            ),
            logger: quietLogger
        )
    }

    @Test("an unreachable server is unavailable, named by host, port and database, never by password")
    func unreachable() async throws {
        let error = await #expect(throws: WeheStoreError.self) {
            _ = try await Self.open(
                "postgres://wehe:s3cr3t-pw@127.0.0.1:1/results?tlsmode=disable", connectTimeout: .seconds(2))
        }
        #expect(error?.code == .unavailable)
        #expect(error?.isRetryable == true)
        #expect(error?.database == "127.0.0.1:1/results")
        #expect(error.map { !"\($0)".contains("s3cr3t") } == true)
    }

    @Test("a URL that is not a PostgreSQL URL is a configuration error")
    func badURL() async throws {
        let error = await #expect(throws: WeheStoreError.self) { _ = try await Self.open("mysql://nobody@host/db") }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("a database that does not exist is reported as not found", .enabled(if: StoreHarness.postgresURL != nil))
    func missingDatabase() async throws {
        let adminURL = try #require(StoreHarness.postgresURL)
        var components = try #require(URLComponents(string: adminURL))
        components.path = "/wehe_no_such_database"
        let url = try #require(components.string)
        let error = await #expect(throws: WeheStoreError.self) { _ = try await Self.open(url) }
        #expect(error?.code == .notFound)
        #expect(error?.database.hasSuffix("/wehe_no_such_database") == true)
    }

    @Test(
        "when the server drops every connection mid-run, errors are retryable, retries succeed, nothing is lost",
        .enabled(if: StoreHarness.postgresURL != nil)
    )
    func connectionsKilled() async throws {
        let adminURL = try #require(StoreHarness.postgresURL)
        try await StoreHarness.withPostgresDatabase { url in
            let store = try await Self.open(url)
            let name = try #require(URLComponents(string: url)?.path.dropFirst())
            var acknowledged: [TestRecord] = []
            var failures: [WeheStoreError] = []
            for index in 0..<60 {
                if index % 15 == 7 {
                    try await StoreHarness.adminSQL(
                        adminURL,
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            + "WHERE datname = '\(name)' AND pid <> pg_backend_pid()"
                    )
                }
                let record = Fixtures.test(count: index, at: Double(index))
                var attempts = 0
                while true {
                    attempts += 1
                    do {
                        try await store.save(test: record)
                        acknowledged.append(record)
                        break
                    } catch let error as WeheStoreError {
                        failures.append(error)
                        #expect(error.isRetryable, "\(error)")
                        #expect(error.database.hasSuffix("/\(name)"))
                        if attempts >= 5 { throw error }
                    }
                }
            }
            #expect(acknowledged.count == 60)
            for record in acknowledged { #expect(try await store.test(record.key) == Fixtures.stored(record)) }
            #expect(try await store.integrityProblems().isEmpty)
            print(
                "PostgreSQL connections killed 4 times: \(failures.count) retryable failure(s) seen, all writes retried"
            )
            await store.close()
        }
    }
}
