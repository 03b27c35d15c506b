import Foundation
import Synchronization
import Testing
import WeheCore
import WeheTestKit

/// Holds the fake analyzer's results back until opened, and tells a waiting test when the client first asked for
/// one: the test then knows the run is inside its first test, past that test's history count.
final class ResultGate: Sendable {
    private let closed = Mutex(true)
    private let asked: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (asked, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether results are held back; records the query.
    func holds() -> Bool {
        let holding = closed.withLock { $0 }
        if holding { continuation.yield() }
        return holding
    }

    /// Returns once the client asked for a result while the gate was closed.
    func waitForQuery() async {
        for await _ in asked { return }
    }

    func open() {
        closed.withLock { $0 = false }
    }
}

/// A setting changed while `wehe run` runs several tests stays changed: the run records its history counter by
/// changing that key alone, and never writes back the settings it read at its start.
@Suite("settings changed during a multi-test run (built binary, loopback server)", .serialized)
struct SettingsDuringRunTests {
    @Test("p-threshold and server set during the first of two tests survive the second test's history count")
    func settingChangedDuringRun() async throws {
        let gate = ResultGate()
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.notReadyAnswers = 0
        behaviour.resultGate = gate
        let (server, _) = try await Harness.start(["tinyweb", "tinysix"], behaviour)
        defer { Task { await server.stop() } }
        let data = TestResources.temporaryDirectory("wehe-settings-during-run")
        let wehe = TestResources.builtProduct("wehe")
        let run = TestProcess()
        run.executableURL = URL(fileURLWithPath: wehe)
        run.arguments = [
            "run", "tinyweb", "tinysix", "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server",
            "127.0.0.1", "--cert", FakeWeheServer.fixture("server.crt"), "--side-channel-port",
            String(server.sideChannelPort), "--analyzer-port", String(server.analyzerPort), "--accept-consent",
            "--no-confirmation",
        ]
        let runOutput = Pipe()
        run.standardOutput = runOutput
        run.standardError = runOutput
        run.standardInput = FileHandle.nullDevice
        try run.run()
        // The first test has taken its history count and waits for its result.
        await gate.waitForQuery()
        let before = try Self.settings(data)
        #expect(before["lastHistoryCount"] as? Int == 1, "\(before)")
        #expect(before["ksPValueThreshold"] == nil)
        for (key, value) in [("p-threshold", "0.02"), ("server", "192.0.2.9")] {
            let set = try await CommandLineTests.wehe(["settings", "set", key, value, "--data-dir", data])
            #expect(set.status == 0, "\(set.stderr)")
        }
        gate.open()
        let output = await onOwnThread {
            let data = runOutput.fileHandleForReading.readDataToEndOfFile()
            run.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(run.terminationStatus == 0, "\(output)")
        #expect(output.contains("test 2 of 2"), "\(output)")
        let after = try Self.settings(data)
        // The second test took the next count, and both settings are as they were set during the run.
        #expect(after["lastHistoryCount"] as? Int == 2, "\(after)")
        #expect(after["ksPValueThreshold"] as? Double == 0.02, "\(after)")
        #expect(after["server"] as? String == "192.0.2.9", "\(after)")
        #expect(after["userID"] as? String == before["userID"] as? String)
        // The history names our version, the one of `wehe --version`, not the protocol's "3.3".
        let summary = try await CommandLineTests.wehe(["results", "show", "1", "--summary", "--data-dir", data])
        #expect(summary.status == 0, "\(summary.stderr)")
        let version = try await CommandLineTests.wehe(["--version"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let number = try #require(version.split(separator: " ").last)
        // The paragraph is wrapped to the width: compare with the line breaks folded into spaces.
        let paragraph = summary.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(paragraph.contains("Measured with Wehe for Swift \(number)."), "\(summary.stdout)")
        #expect(!summary.stdout.contains("3.3"), "\(summary.stdout)")
    }

    static func settings(_ data: String) throws -> [String: Any] {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data + "/settings.json"))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }
}
