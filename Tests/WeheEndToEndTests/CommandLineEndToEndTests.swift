import Foundation
import Testing
import WeheTestKit

/// The built `wehe` binary against our server running in the test process.
@Suite("wehe run / results against our server (built binary)", .timeLimit(.minutes(3)))
struct CommandLineEndToEndTests {
    @Test("an interleaved run announces each further round: its number of the total, its cost and what is left")
    func interleavedRounds() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-rounds")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let run = try await LoopbackWorld.run(address: "127.0.0.161", sampleCount: 2000) { world in
            try await BuiltCommand.run(
                "wehe",
                [
                    "run", "tinyweb", "--interleaved", "--rounds", "8", "--replays", TestResources.fixtureReplays,
                    "--data-dir", data, "--server", world.address, "--cert", world.caPath, "--side-channel-port",
                    String(world.ports.sideChannelTLS ?? -1), "--analyzer-port", String(world.ports.analyzerTLS ?? -1),
                    "--accept-consent", "--no-confirmation",
                ])
        }
        #expect(run.status == 0, "\(run.stderr)")
        // Lines are wrapped at 80 columns: read them unwrapped.
        let flat = run.stdout.replacingOccurrences(of: "\n    ", with: " ").replacingOccurrences(of: "\n  ", with: " ")
        for round in 2...8 { #expect(flat.contains("Round \(round) of 8 of Tiny Web: about "), "\(run.stdout)") }
        #expect(!flat.contains("Round 1 of 8"), "the published test is round 1 and says so itself")
        #expect(flat.contains("left with this round and the later ones"), "\(run.stdout)")
    }

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
            for line in [
                "Replaying Tiny Web (original", "Replaying Tiny Web (control", "VERDICT", "Tiny Web", "Tiny Call",
                "Port 8081 (Test), small",
            ] {
                #expect(run.stdout.contains(line), "missing \(line)")
            }
            #expect(!run.stdout.contains("\u{1B}["), "escape sequences off a terminal")
            let json = try await BuiltCommand.run("wehe", ["run", "tinysix", "--json"] + common)
            #expect(json.status == 0, "\(json.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["test"] as? String == "tinysix")
            // A 0.1 s replay on a 0.5 ms sample grid (this server's 2000 samples) is noisy: any analysed verdict.
            #expect(["no-differentiation", "inconclusive", "differentiation"].contains(object["verdict"] as? String))
            #expect((object["originalMeanMbps"] as? Double ?? 0) > 0)
        }
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        #expect(results.status == 0, "\(results.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(results.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 4)
        #expect(
            Set(rows.compactMap { $0["replay"] as? String })
                == ["TinyWeb-11212026", "TinyCall-11212026", "port_8081", "TinySix-11212026"])
        #expect(rows.allSatisfy { ($0["verdict"] as? String)?.isEmpty == false })
        // The table names the apps as the catalog of the replay directory does.
        let table = try await BuiltCommand.run(
            "wehe", ["results", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(table.stdout.contains("Tiny Call"), "\(table.stdout)")
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

    @Test("Ctrl-C during a replay: exit 130 with one line, nothing in the history, the server takes the next test")
    func interrupted() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-cli")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.18") { world in
            let common = [
                "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", world.address,
                "--cert", world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
                "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
            ]
            // The UDP test replays for about 1.2 s per replay: interrupt once the first replay has started.
            let running = try BuiltCommand.start("wehe", ["run", "tinycall"] + common)
            let clock = ContinuousClock()
            let giveUp = clock.now.advanced(by: .seconds(30))
            while !running.stdoutSoFar.contains("Replaying "), running.process.isRunning, clock.now < giveUp {
                try await clock.sleep(for: .milliseconds(10))
            }
            running.process.interrupt()
            let output = try await running.wait()
            #expect(output.status == 130)
            #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
            let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
            #expect(results.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            // The same address may test again at once: the interrupted session no longer holds the slot.
            let next = try await BuiltCommand.run("wehe", ["run", "tinyweb"] + common)
            #expect(next.status == 0, "\(next.stderr)")
        }
    }

    @Test("wehe demo runs the bundled traces against its in-process server in seconds and exits 0")
    func demo() async throws {
        let run = try await BuiltCommand.run(
            "wehe", ["demo", "--replays", TestResources.fixtureReplays, "--tests", "tinyweb,tinycall", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let objects = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        // tinycall's datagrams are measured in many intervals: no differentiation. tinyweb's four responses cross
        // loopback in a few intervals: "no differentiation" only when they happened to span ten or more of them,
        // else inconclusive for too few measurements (never a verdict the samples cannot support).
        #expect(objects.map { $0["test"] as? String } == ["tinyweb", "tinycall"])
        #expect(objects[1]["verdict"] as? String == "no-differentiation")
        let web = objects[0]
        let webVerdict = web["verdict"] as? String
        let tooFew = (web["reason"] as? String)?.hasPrefix("too few measurements") == true
        #expect(webVerdict == "no-differentiation" || (webVerdict == "inconclusive" && tooFew), "\(web)")
        #expect(run.stderr.contains("127.0.0.1"))
    }

    @Test("wehe demo alone shows both outcomes (one test slowed alone, one with its control) and says why")
    func demoBothOutcomes() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let run = try await BuiltCommand.run("wehe", ["demo", "--replays", TestResources.fixtureReplays, "--json"])
        let elapsed = clock.now - started
        // A figure, not a bound: printed for the log (the demo is meant to take well under 30 s).
        print("wehe demo (bundled tiny traces) took \(elapsed)")
        #expect(elapsed < .seconds(120))
        #expect(run.status == 0, "\(run.stderr)")
        let objects = try run.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(objects.count == 2)
        // The plan: the larger of the two shortest TCP app tests is slowed alone (Tiny Web), the other with its
        // control (Tiny Six).
        #expect(objects.map { $0["test"] as? String } == ["tinyweb", "tinysix"])
        #expect(objects.first?["verdict"] as? String == "differentiation", "\(objects.first ?? [:])")
        #expect(objects.first?["direction"] as? String == "throttled")
        #expect(objects.last?["verdict"] as? String == "no-differentiation", "\(objects.last ?? [:])")
        let line = try #require(run.stderr.split(separator: "\n").first { $0.hasPrefix("What happened:") })
        let slowedPart = "only Tiny Web was throttled, not its control → differentiation (throttled)"
        #expect(line.contains(slowedPart), "\(run.stderr)")
        #expect(line.contains("Tiny Six and its control were throttled alike → no differentiation"))
        // The plan is said before the tests run (wrapped on the terminal's width).
        #expect(run.stderr.replacingOccurrences(of: "\n  ", with: " ").contains("slows Tiny Web's own traffic"))
    }

    @Test("wehe demo --throttle puts the middlebox in the path: the throttled test shows differentiation")
    func demoThrottled() async throws {
        let run = try await BuiltCommand.run(
            "wehe",
            [
                "demo", "--replays", TestResources.fixtureReplays, "--tests", "tinyweb", "--throttle", "tinyweb:1mbit",
                "--json",
            ])
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
final class BuiltCommand: Sendable {
    struct Output: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    let process: TestProcess
    private let directory: String
    private let handles: [FileHandle]
    private let status: AsyncStream<Int32>

    private init(process: TestProcess, directory: String, handles: [FileHandle], status: AsyncStream<Int32>) {
        self.process = process
        self.directory = directory
        self.handles = handles
        self.status = status
    }

    /// Starts the product with `arguments` in the package root.
    static func start(_ product: String, _ arguments: [String]) throws -> BuiltCommand {
        try start(executable: TestResources.builtProduct(product), arguments)
    }

    /// Starts any executable (a path) with `arguments` in the package root.
    static func start(executable: String, _ arguments: [String]) throws -> BuiltCommand {
        let directory = TestResources.temporaryDirectory("wehe-e2e-output")
        guard FileManager.default.createFile(atPath: directory + "/stdout", contents: nil),
            FileManager.default.createFile(atPath: directory + "/stderr", contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/stdout"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/stderr"))
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: TestResources.packageRoot)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let (status, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .bufferingNewest(1))
        process.terminationHandler = { finished in
            continuation.yield(finished.terminationStatus)
            continuation.finish()
        }
        try process.run()
        return BuiltCommand(process: process, directory: directory, handles: [out, err], status: status)
    }

    /// What the process has written to stdout so far.
    var stdoutSoFar: String { (try? String(contentsOfFile: directory + "/stdout", encoding: .utf8)) ?? "" }

    /// Waits for the exit and returns the status and output.
    func wait() async throws -> Output {
        var iterator = status.makeAsyncIterator()
        let code = await iterator.next() ?? -1
        for handle in handles { try handle.close() }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return Output(
            status: code, stdout: stdoutSoFar,
            stderr: (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? "")
    }

    /// Runs the product to completion.
    static func run(_ product: String, _ arguments: [String]) async throws -> Output {
        try await start(product, arguments).wait()
    }

    /// Runs any executable (a path) to completion.
    static func run(executable: String, _ arguments: [String]) async throws -> Output {
        try await start(executable: executable, arguments).wait()
    }
}
