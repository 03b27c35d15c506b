import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// A writer process killed with SIGKILL in the middle of many writes loses nothing it acknowledged, and the
/// database passes its integrity check afterwards.
@Suite("Durability under SIGKILL", .serialized)
struct DurabilityTests {
    /// The `wehe-server` binary built next to the test bundle.
    static func serverBinary() throws -> URL {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundleDirectory.appendingPathComponent("wehe-server")]
        // The test bundle may sit inside a `.xctest` directory.
        candidates.append(bundleDirectory.deletingLastPathComponent().appendingPathComponent("wehe-server"))
        candidates.append(
            bundleDirectory.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "wehe-server"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw DurabilityError("wehe-server is not built next to the tests (looked in \(candidates.map(\.path)))")
        }
        return found
    }

    struct DurabilityError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Starts `wehe-server db stress-write`, kills it once `threshold` writes were acknowledged, and returns the
    /// acknowledged keys.
    static func killMidRun(storeArguments: [String], ackFile: String, threshold: Int) async throws -> [TestKey] {
        let process = TestProcess()
        process.executableURL = try serverBinary()
        process.arguments =
            ["db", "stress-write"] + storeArguments + ["--ack-file", ackFile, "--count", "200000", "--writers", "4"]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let deadline = ContinuousClock.now + .seconds(120)
        var acknowledged = 0
        while acknowledged < threshold {
            guard process.isRunning else {
                let message = String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
                throw DurabilityError("the writer exited early (status \(process.terminationStatus)): \(message)")
            }
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw DurabilityError("the writer acknowledged only \(acknowledged) writes in 120 s")
            }
            // Waiting on another process: poll its ack file.
            try await Task.sleep(for: .milliseconds(20))
            acknowledged = (try? String(contentsOfFile: ackFile, encoding: .utf8))?.split(separator: "\n").count ?? 0
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        let text = try String(contentsOfFile: ackFile, encoding: .utf8)
        // Only whole lines count: the last one may have been cut by the kill.
        let lines = text.hasSuffix("\n") ? text.split(separator: "\n") : text.split(separator: "\n").dropLast()
        return try lines.map { line in
            guard let slash = line.lastIndex(of: "/"), let count = Int(line[line.index(after: slash)...]) else {
                throw DurabilityError("malformed ack line \(line)")
            }
            return TestKey(userID: String(line[..<slash]), historyCount: count)
        }
    }

    static func verify(_ store: SQLResultStore, acknowledged: [TestKey]) async throws {
        #expect(acknowledged.count >= 300)
        var missing: [TestKey] = []
        for key in acknowledged {
            guard let record = try await store.test(key) else {
                missing.append(key)
                continue
            }
            #expect(record.replays.count == 2)
            #expect(record.replays.first?.samples.count == 50)
        }
        #expect(missing.isEmpty, "acknowledged but missing: \(missing.prefix(10))")
        #expect(try await store.integrityProblems().isEmpty)
        let stored = try await store.counts(CountQuery(groupBy: [])).first?.count ?? 0
        #expect(stored >= acknowledged.count)
    }

    @Test("SQLite: every acknowledged write survives SIGKILL and the file passes PRAGMA integrity_check")
    func sqlite() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/durable.sqlite"
            let acknowledged = try await Self.killMidRun(
                storeArguments: ["--database", path],
                ackFile: directory + "/ack.txt",
                threshold: 300
            )
            let store = try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))),
                logger: quietLogger
            )
            try await Self.verify(store, acknowledged: acknowledged)
            await store.close()
        }
    }

    @Test(
        "PostgreSQL: every acknowledged write survives SIGKILL of the writer and the tables read back whole",
        .enabled(if: StoreHarness.postgresURL != nil)
    )
    func postgres() async throws {
        try await StoreHarness.withPostgresDatabase { url in
            try await StoreHarness.withTemporaryDirectory { directory in
                let acknowledged = try await Self.killMidRun(
                    storeArguments: ["--postgres-url", url],
                    ackFile: directory + "/ack.txt",
                    threshold: 300
                )
                let store = try await SQLResultStore.open(
                    configuration: SQLStoreConfiguration(backend: .postgres(PostgresOptions(url: url))),
                    logger: quietLogger
                )
                try await Self.verify(store, acknowledged: acknowledged)
                await store.close()
            }
        }
    }
}
