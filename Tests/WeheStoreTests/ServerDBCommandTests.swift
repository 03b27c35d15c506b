import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// `wehe-server db migrate|check|export`, run as the built binary.
@Suite("wehe-server db")
struct ServerDBCommandTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
    }

    static func run(_ arguments: [String]) async throws -> Run {
        try await onOwnThread { try runWaiting(arguments) }
    }

    private static func runWaiting(_ arguments: [String]) throws -> Run {
        let process = TestProcess()
        process.executableURL = try DurabilityTests.serverBinary()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["WEHE_SERVER_POSTGRES_URL"] = nil
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            output: String(decoding: outData, as: UTF8.self),
            errors: String(decoding: errData, as: UTF8.self)
        )
    }

    @Test("migrate creates the database, check reports it healthy, export writes every test")
    func lifecycle() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/data/results.sqlite"
            let migrate = try await Self.run(["db", "migrate", "--database", path])
            #expect(migrate.status == 0, "\(migrate.errors)")
            #expect(migrate.output.contains("schema version \(SQLResultStore.latestSchemaVersion)"))

            let store = try await SQLResultStore.open(
                configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: path))),
                logger: quietLogger
            )
            var odd = Fixtures.test(
                count: 2, provider: "Comcast, \"Xfinity\" (WiFi)", at: 10, verdict: .differentiation)
            odd.analyses[0].summary.areaTest = .nan
            let records = [
                Fixtures.test(count: 1, at: 0, verdict: .noDifferentiation), odd, Fixtures.test(count: 3, at: 20),
            ]
            try await store.save(tests: records)
            await store.close()

            let check = try await Self.run(["db", "check", "--database", path])
            #expect(check.status == 0, "\(check.errors)")
            #expect(check.output.contains("tests: 3"))
            #expect(check.output.contains("integrity: ok"))

            let jsonl = try await Self.run(["db", "export", "--database", path, "--format", "jsonl"])
            #expect(jsonl.status == 0, "\(jsonl.errors)")
            let lines = jsonl.output.split(separator: "\n")
            #expect(lines.count == 3)
            let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
            #expect(second["historyCount"] as? Int == 2)
            #expect(second["provider"] as? String == "Comcast, \"Xfinity\" (WiFi)")
            #expect(second["clientAddress"] as? String == "198.51.100.0/24")
            #expect(second["startedAt"] as? String == "2024-05-13T12:00:10.000000Z")
            let replays = try #require(second["replays"] as? [[String: Any]])
            #expect(replays.count == 2)
            #expect(replays[0]["testID"] as? Int == 0)
            // JSONSerialization rounds some doubles on Linux; JSONDecoder reads them exactly.
            struct Samples: Decodable {
                struct Replay: Decodable {
                    var mbps: [Double]
                    var times: [Double]
                }
                var replays: [Replay]
            }
            let decoded = try JSONDecoder().decode(Samples.self, from: Data(lines[1].utf8))
            #expect(decoded.replays.map(\.mbps) == records[1].replays.map(\.samples.mbps))
            #expect(decoded.replays.map(\.times) == records[1].replays.map(\.samples.times))
            let analyses = try #require(second["analyses"] as? [[String: Any]])
            let summary = try #require(analyses.first?["summary"] as? [String: Any])
            #expect(summary["areaTest"] as? String == "NaN")
            #expect(summary["verdict"] as? String == "differentiation")

            let csv = try await Self.run([
                "db", "export", "--database", path, "--format", "csv", "--from", "2024-05-13T12:00:05Z",
            ])
            #expect(csv.status == 0, "\(csv.errors)")
            let rows = csv.output.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            #expect(rows.count == 3)
            #expect(rows[0].hasPrefix("user_id,history_count,started_at,"))
            #expect(rows[1].hasPrefix("@abc123xyz,2,"))
            #expect(rows[1].contains(",\"Comcast, \"\"Xfinity\"\" (WiFi)\",LTE,"))
            #expect(rows[1].contains(",differentiation,throttled,nan,"))
            #expect(rows[2].hasPrefix("@abc123xyz,3,"))
            #expect(csv.errors.contains("exported 2 test(s)"))
        }
    }

    @Test("db takes the data directory as --data, like serve; the former --data-directory still works, unlisted")
    func dataOption() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let migrate = try await Self.run(["db", "migrate", "--data", directory])
            #expect(migrate.status == 0, "\(migrate.errors)")
            #expect(FileManager.default.fileExists(atPath: directory + "/results.sqlite"))
            let check = try await Self.run(["db", "check", "--data", directory])
            #expect(check.status == 0, "\(check.errors)")
            let legacy = try await Self.run(["db", "check", "--data-directory", directory])
            #expect(legacy.status == 0, "\(legacy.errors)")
            let help = try await Self.run(["db", "check", "--help"])
            #expect(help.output.contains("--data <"))
            #expect(!help.output.contains("--data-directory"))
        }
    }

    @Test("check and export fail with exit code 3 and a clear message on a missing or corrupted database")
    func badDatabases() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let missing = directory + "/missing.sqlite"
            let check = try await Self.run(["db", "check", "--database", missing])
            #expect(check.status == 3)
            #expect(check.errors.contains("database \(missing): notFound"))
            #expect(!FileManager.default.fileExists(atPath: missing))

            let corrupted = directory + "/corrupted.sqlite"
            #expect(FileManager.default.createFile(atPath: corrupted, contents: Data(repeating: 0x42, count: 8_192)))
            let export = try await Self.run(["db", "export", "--database", corrupted, "--format", "csv"])
            #expect(export.status == 3)
            #expect(export.errors.contains("database \(corrupted): corrupted"))

            let both = try await Self.run([
                "db", "check", "--database", missing, "--postgres-url", "postgres://x@127.0.0.1/y",
            ])
            #expect(both.status == 64)
            #expect(both.errors.contains("exclude each other"))
        }
    }
}
