import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// `wehe-server db purge --older-than <days>`, run as the built binary (issue 16 item 6).
@Suite("wehe-server db purge")
struct ServerPurgeCommandTests {
    @Test("purge deletes the tests older than the given days and reports what it deleted")
    func purgeOldTests() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/results.sqlite"
            let store = try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))),
                logger: quietLogger
            )
            // Fixture times are in May 2024: far older than 30 days. One test started now is kept.
            var recent = Fixtures.test(user: "@recent01", count: 1, at: 0)
            recent.metadata.startedAt = Date()
            for index in recent.replays.indices { recent.replays[index].receivedAt = Date() }
            try await store.save(tests: [Fixtures.test(count: 1, at: 0), Fixtures.test(count: 2, at: 10), recent])
            await store.close()

            let refused = try ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "0"])
            #expect(refused.status != 0)
            #expect(refused.errors.contains("at least 1"))

            let purge = try ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "30"])
            #expect(purge.status == 0, "\(purge.errors)")
            #expect(purge.output.contains("tests 2, replays 4,"), "\(purge.output)")

            let check = try ServerDBCommandTests.run(["db", "check", "--database", path])
            #expect(check.output.contains("tests: 1"), "\(check.output)")
            let again = try ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "30"])
            #expect(again.output.contains("tests 0, replays 0,"), "\(again.output)")
        }
    }
}
