import Foundation
import Testing
import WeheServer
import WeheTestKit

/// A recorded test runs on a server that does not have it: the built `wehe run` uploads the recorded trace when the
/// server answers "unknown replay", and a server without `--accept-client-traces` gets the operator hint, exit 36.
@Suite("wehe record → wehe run on a server without the test (built binaries)", .timeLimit(.minutes(3)))
struct ClientTraceEndToEndTests {
    /// An HTTP download on port 80 (a port the fixture server replays): one request, 600 KB over 1.2 s.
    static func capture() -> SyntheticCapture {
        var capture = SyntheticCapture(link: .ethernet)
        var connection = SyntheticTCPConnection(
            client: SyntheticCapture.Endpoint("192.168.7.20", 51000),
            server: SyntheticCapture.Endpoint("203.0.113.80", 80))
        let start = 1_700_000_000.0
        connection.handshake(at: start, into: &capture)
        connection.clientSends(
            Array("GET /clip.mp4 HTTP/1.1\r\nHost: clips.example.org\r\n\r\n".utf8), at: start + 0.01, into: &capture)
        for index in 0..<200 {
            let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            connection.serverSends(payload, at: start + 0.02 + Double(index) * 0.006, into: &capture)
        }
        return capture
    }

    static func record(into scratch: String) async throws -> String {
        let pcap = scratch + "/clips.pcap"
        try Self.capture().write(to: pcap, format: .pcap)
        let replays = scratch + "/replays"
        let record = try await BuiltCommand.run(
            "wehe",
            [
                "record", "--pcap", pcap, "--client", "192.168.7.20", "--id", "clips", "--name", "Clips",
                "--category", "video", "--output", replays,
            ])
        #expect(record.status == 0, "\(record.stderr)")
        return replays
    }

    static func run(_ world: LoopbackWorld, replays: String, data: String) async throws -> BuiltCommand.Output {
        try await BuiltCommand.run(
            "wehe",
            [
                "run", "clips", "--replays", replays, "--data-dir", data, "--server", world.address, "--cert",
                world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1), "--analyzer-port",
                String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation", "--json",
            ])
    }

    @Test("the server (fixture replays only) runs the uploaded recording: exit 0, the upload said first")
    func uploadedAndRun() async throws {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-client-trace")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let replays = try await Self.record(into: scratch)
        let accepting: (inout ReplayServerConfiguration) -> Void = { $0.clientTraces = ClientTracePolicy() }
        try await LoopbackWorld.run(address: "127.0.0.151", sampleCount: 2000, configure: accepting) { world in
            let run = try await Self.run(world, replays: replays, data: scratch + "/data")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("does not have the recorded test"), "\(run.stderr)")
            #expect(run.stderr.contains("bytes) for this test only"), "\(run.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            #expect(object["test"] as? String == "clips")
            // The recording's bytes crossed (its mean rate, from samples of a replay that takes milliseconds on
            // loopback, came out 0 once in a full CI run's load: the published analysis then has too few samples).
            #expect((object["bytes"] as? Int ?? 0) > 0, "\(run.stdout)")
            // The history tells the user's recording apart from the Wehe team's tests.
            let results = try await BuiltCommand.run(
                "wehe", ["results", "--replays", replays, "--data-dir", scratch + "/data", "--lang", "en"])
            #expect(results.status == 0, "\(results.stderr)")
            #expect(results.stdout.contains("Clips (your recording)"), "\(results.stdout)")
        }
    }

    @Test("a server without --accept-client-traces: exit 36 with the operator hint")
    func refusedWhenOff() async throws {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-client-trace-off")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let replays = try await Self.record(into: scratch)
        try await LoopbackWorld.run(address: "127.0.0.152") { world in
            let run = try await Self.run(world, replays: replays, data: scratch + "/data")
            #expect(run.status == 36, "\(run.stderr)")
            #expect(run.stderr.contains("ask its operator to enable --accept-client-traces"), "\(run.stderr)")
            #expect(run.stderr.contains("wehe-server serve --replays <dir>"), "\(run.stderr)")
        }
    }
}
