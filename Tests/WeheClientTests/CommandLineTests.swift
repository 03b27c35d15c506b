import Foundation
import Testing
import WeheCore
import WeheTestKit

/// `wehe run` and `wehe results` as built, against the scripted loopback server.
@Suite("wehe run against a loopback server (built binary)", .serialized)
struct CommandLineTests {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the built `wehe`; the wait happens on a thread of its own (`onOwnThread`): the scripted server these
    /// tests run it against is in this process and needs the cooperative threads.
    static func wehe(_ arguments: [String]) async throws -> Output {
        try await onOwnThread { try weheWaiting(arguments) }
    }

    private static func weheWaiting(_ arguments: [String]) throws -> Output {
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: TestResources.builtProduct("wehe"))
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    @Test("run prints plain progress lines off a terminal and a verdict table; results lists the test")
    func runAndResults() async throws {
        let (server, _) = try await Harness.start(["tinyweb"])
        defer { Task { await server.stop() } }
        let data = TestResources.temporaryDirectory("wehe-cli-run")
        let common = [
            "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", "127.0.0.1", "--cert",
            FakeWeheServer.fixture("server.crt"), "--side-channel-port", String(server.sideChannelPort),
            "--analyzer-port", String(server.analyzerPort), "--accept-consent", "--no-confirmation",
        ]
        let run = try await Self.wehe(["run", "tinyweb"] + common)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("Replaying Tiny Web (original, the app's recorded traffic)"), "\(run.stdout)")
        #expect(run.stdout.contains("Replaying Tiny Web (control, the same bytes disguised)"), "\(run.stdout)")
        #expect(run.stdout.contains("VERDICT"))
        // Loopback delivers tinyweb's four responses in a few sample intervals: too few measurements for a
        // "no differentiation", and the table says why.
        #expect(run.stdout.contains("inconclusive"))
        #expect(run.stdout.contains("Tiny Web: inconclusive, too few measurements"), "\(run.stdout)")
        #expect(run.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(run.stdout)")
        #expect(!run.stdout.contains("\u{1B}["))
        let json = try await Self.wehe(["run", "tinyweb", "--json"] + common)
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["test"] as? String == "tinyweb")
        #expect(object["verdict"] as? String == "inconclusive")
        #expect((object["reason"] as? String)?.hasPrefix("too few measurements") == true)
        for key in ["originalMeanMbps", "controlMeanMbps", "ksPValue", "area", "durationSeconds", "bytes"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        let replays = ["--replays", TestResources.fixtureReplays]
        let results = try await Self.wehe(["results", "--data-dir", data] + replays)
        #expect(results.status == 0)
        // App names (not replay names), the verdict, the time zone, 80 columns.
        let lines = results.stdout.split(separator: "\n").filter { $0.contains("Tiny Web") }
        #expect(lines.count == 2, "\(results.stdout)")
        #expect(!results.stdout.contains("TinyWeb-11212026"))
        #expect(results.stdout.contains("inconclusive"))
        #expect(results.stdout.contains("times in "), "\(results.stdout)")
        #expect(results.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(results.stdout)")
        let listed = try await #require(
            try JSONSerialization.jsonObject(
                with: Data(try Self.wehe(["results", "--json", "--data-dir", data] + replays).stdout.utf8))
                as? [[String: Any]])
        #expect(listed.count == 2)
        #expect(listed.first?["app"] as? String == "Tiny Web")
        #expect(listed.first?["replay"] as? String == "TinyWeb-11212026")
        #expect((listed.first?["date"] as? String)?.contains("T") == true)
        #expect((listed.first?["reason"] as? String)?.hasPrefix("too few measurements") == true)
        let csv = try await Self.wehe(["results", "export", "--format", "csv", "--data-dir", data] + replays)
        #expect(csv.status == 0, "\(csv.stderr)")
        let csvLines = csv.stdout.split(separator: "\n")
        #expect(csvLines.count == 3)
        // The result record's keys (Docs/result.schema.json) are the columns.
        #expect(csvLines.first?.hasPrefix("schemaVersion,kind,historyCount,id,date,test,name,app,replay,") == true)
        #expect(csvLines.first?.contains(",verdict,direction,firstVerdict,confirmed,originalMeanMbps,") == true)
        let exported = try await Self.wehe(["results", "export", "--format", "json", "--data-dir", data] + replays)
        #expect((try JSONSerialization.jsonObject(with: Data(exported.stdout.utf8)) as? [Any])?.count == 2)
        let show = try await Self.wehe(["results", "show", "1", "--data-dir", data] + replays)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("area_test"))
        #expect(show.stdout.contains("▁") || show.stdout.contains("█"))
        #expect(show.stdout.contains("one scale for both"))
        let showJSON = try await #require(
            try JSONSerialization.jsonObject(
                with: Data(try Self.wehe(["results", "show", "1", "--json", "--data-dir", data] + replays).stdout.utf8))
                as? [String: Any])
        #expect(showJSON["app"] as? String == "Tiny Web")
        #expect((showJSON["replays"] as? [Any])?.count == 2)
        let paragraph = try await Self.wehe(["results", "show", "1", "--summary", "--data-dir", data] + replays)
        #expect(paragraph.stdout.contains("The Wehe test of Tiny Web"), "\(paragraph.stdout)")
        #expect(paragraph.stdout.contains("too few measurements"))
        #expect(paragraph.stdout.contains("127.0.0.1"))
        let french = try await Self.wehe(
            ["results", "show", "1", "--summary", "--lang", "fr", "--data-dir", data] + replays)
        #expect(french.stdout.contains("Le test Wehe de Tiny Web"), "\(french.stdout)")
    }

    @Test("the confirmation line says what the first run found and why the test runs again")
    func confirmationLine() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0.74
        behaviour.ksPValue = 1e-4
        // The direction follows the means; measured on loopback they fall either way (a full run once read the
        // app as prioritized at 4.3 against 4.2 Mbit/s), so the analyzer reports them.
        behaviour.meansMbps = (original: 2.1, control: 8.4)
        let (server, _) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let data = TestResources.temporaryDirectory("wehe-cli-confirm")
        let run = try await Self.wehe([
            "run", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", "127.0.0.1",
            "--cert", FakeWeheServer.fixture("server.crt"), "--side-channel-port", String(server.sideChannelPort),
            "--analyzer-port", String(server.analyzerPort), "--accept-consent",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stdout.contains("result not clear"))
        // Progress lines are wrapped at 80 columns: read them unwrapped.
        let flat = run.stdout.replacingOccurrences(of: "\n    ", with: " ")
        #expect(flat.contains("the app looks throttled ("), "\(run.stdout)")
        #expect(flat.contains("area 0.74, KS p < 0.001); running the whole test once more to confirm it"))
        #expect(run.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 }, "\(run.stdout)")
        #expect(run.stdout.contains("again to confirm the first result"), "\(run.stdout)")
    }
}
