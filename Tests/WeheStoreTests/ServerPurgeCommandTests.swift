import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// `wehe-server db purge --older-than <days>`, run as the built binary.
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

            let refused = try await ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "0"])
            #expect(refused.status != 0)
            #expect(refused.errors.contains("at least 1"))

            let purge = try await ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "30"])
            #expect(purge.status == 0, "\(purge.errors)")
            #expect(purge.output.contains("tests 2, replays 4,"), "\(purge.output)")

            let check = try await ServerDBCommandTests.run(["db", "check", "--database", path])
            #expect(check.output.contains("tests: 1"), "\(check.output)")
            let again = try await ServerDBCommandTests.run(["db", "purge", "--database", path, "--older-than", "30"])
            #expect(again.output.contains("tests 0, replays 0,"), "\(again.output)")
        }
    }
}

/// `wehe-server serve --retention-days` on the built binary: the running server purges its own database.
@Suite("wehe-server serve --retention-days")
struct ServeRetentionTests {
    @Test("a server started with --retention-days 30 deletes the tests older than 30 days from its database")
    func servePurgesAtStart() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/results.sqlite"
            let configuration = SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path)))
            let seeded = try await SQLResultStore.open(configuration: configuration, logger: quietLogger)
            var recent = Fixtures.test(user: "@recent02", count: 1, at: 0)
            recent.metadata.startedAt = Date()
            for index in recent.replays.indices { recent.replays[index].receivedAt = Date() }
            try await seeded.save(tests: [Fixtures.test(count: 1, at: 0), recent])
            await seeded.close()

            let replays = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Fixtures/replays").path
            let process = TestProcess()
            process.executableURL = try DurabilityTests.serverBinary()
            process.arguments = [
                "serve", "--data", directory, "--replays", replays, "--bind", "127.0.0.1",
                "--side-channel-port", "0", "--side-channel-plain-port", "off", "--analyzer-port", "off",
                "--analyzer-plain-port", "off", "--ephemeral-replay-ports", "--retention-days", "30",
                "--log-level", "warning",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer {
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
            }
            let reader = try await SQLResultStore.open(configuration: configuration, logger: quietLogger)
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: .seconds(30))
            var old = try await reader.test(TestKey(userID: "@abc123xyz", historyCount: 1))
            while old != nil, clock.now < deadline, process.isRunning {
                try await Task.sleep(for: .milliseconds(50))
                old = try await reader.test(TestKey(userID: "@abc123xyz", historyCount: 1))
            }
            #expect(old == nil)
            #expect(try await reader.test(recent.key) != nil)
            await reader.close()
        }
    }
}
