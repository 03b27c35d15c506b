import Foundation
import Testing
import WeheTestKit

/// The built `wehe` binary against our server running in the test process.
@Suite("wehe run / results against our server (built binary)", .timeLimit(.minutes(3)))
struct CommandLineEndToEndTests {
    @Test("run a TCP, a UDP and a port test: plain progress lines, verdict table, exit 0; results lists all three")
    func runAndList() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.16", sampleCount: 2000) { world in
            let common = [
                "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", world.address,
                "--cert", world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
                "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
            ]
            let run = try await BuiltCommand.run("wehe", ["run", "tinyweb", "tinycall", "port8081s"] + common)
            #expect(run.status == 0, "\(run.stderr)")
            for line in ["replay 1/2", "replay 2/2", "VERDICT", "Tiny Web", "Tiny Call", "8081 Test"] {
                #expect(run.stdout.contains(line), "missing \(line)")
            }
            #expect(!run.stdout.contains("\u{1B}["), "escape sequences off a terminal")
            let json = try await BuiltCommand.run("wehe", ["run", "tinysix", "--json"] + common)
            #expect(json.status == 0, "\(json.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["test"] as? String == "tinysix")
            #expect(object["verdict"] as? String == "no-differentiation")
        }
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        #expect(results.status == 0, "\(results.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(results.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 4)
        #expect(
            Set(rows.compactMap { $0["replay"] as? String })
                == ["TinyWeb-11212026", "TinyCall-11212026", "port_8081", "TinySix-11212026"])
        #expect(rows.allSatisfy { ($0["verdict"] as? String)?.isEmpty == false })
        let table = try await BuiltCommand.run("wehe", ["results", "--data-dir", data])
        #expect(table.stdout.contains("TinyCall-11212026"))
        let show = try await BuiltCommand.run("wehe", ["results", "show", "2", "--data-dir", data])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("TinyCall-11212026") && show.stdout.contains("area_test"))
    }

    @Test("a server that goes away: exit 5 with one line, and nothing enters the history")
    func unreachable() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        // Take the ports of a server that has stopped: nothing listens there any more.
        let (side, analyzer, caPEM) = try await LoopbackWorld.run(address: "127.0.0.17") { world in
            (world.ports.sideChannelTLS ?? -1, world.ports.analyzerTLS ?? -1, world.caPEM)
        }
        let caPath = data + "/ca.crt"
        try caPEM.write(toFile: caPath, atomically: true, encoding: .utf8)
        let run = try await BuiltCommand.run(
            "wehe",
            [
                "run", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server",
                "127.0.0.17", "--cert", caPath, "--side-channel-port", String(side), "--analyzer-port",
                String(analyzer), "--accept-consent",
            ])
        #expect(run.status == 5)
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        #expect(results.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test("wehe demo runs the bundled traces against its in-process server in seconds and exits 0")
    func demo() async throws {
        let run = try await BuiltCommand.run(
            "wehe", ["demo", "--replays", TestResources.fixtureReplays, "--tests", "tinyweb,tinycall", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let verdicts = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["verdict"] as? String
        }
        #expect(verdicts == ["no-differentiation", "no-differentiation"])
        #expect(run.stderr.contains("127.0.0.1"))
    }

    @Test("wehe demo --throttle puts the middlebox in the path: the throttled test shows differentiation")
    func demoThrottled() async throws {
        let run = try await BuiltCommand.run(
            "wehe",
            ["demo", "--replays", TestResources.fixtureReplays, "--tests", "tinyweb", "--throttle", "tinyweb:1mbit",
             "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["verdict"] as? String == "differentiation")
        #expect(object["direction"] as? String == "throttled")
        let app = try #require(object["originalMeanMbps"] as? Double)
        #expect(app < 1.2)
    }
}

/// Runs a built executable without blocking a concurrency thread (the in-process server needs them): output goes
/// to temporary files, termination is awaited through the process's handler.
enum BuiltCommand {
    struct Output: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static func run(_ product: String, _ arguments: [String]) async throws -> Output {
        let directory = TestResources.temporaryDirectory("wehe-e2e-output")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outPath = directory + "/stdout"
        let errPath = directory + "/stderr"
        guard FileManager.default.createFile(atPath: outPath, contents: nil),
            FileManager.default.createFile(atPath: errPath, contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct(product))
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: TestResources.packageRoot)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try out.close()
        try err.close()
        return Output(
            status: status,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}
