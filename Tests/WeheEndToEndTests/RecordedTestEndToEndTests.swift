import Foundation
import Testing
import WeheTestKit

/// A capture the test writes becomes a test with the built `wehe record`, our server serves the directory it wrote,
/// and the built `wehe run` runs it: both read the recorded files as they are.
@Suite("wehe record → wehe-server serve → wehe run (built binaries)", .timeLimit(.minutes(3)))
struct RecordedTestEndToEndTests {
    /// An HTTP download: one request, then 1.5 MB in 500 segments over 2 s (every 4 ms).
    static func capture() -> SyntheticCapture {
        var capture = SyntheticCapture(link: .ethernet)
        var connection = SyntheticTCPConnection(
            client: SyntheticCapture.Endpoint("192.168.7.20", 51000),
            server: SyntheticCapture.Endpoint("203.0.113.80", 8080))
        let start = 1_700_000_000.0
        connection.handshake(at: start, into: &capture)
        connection.clientSends(
            Array("GET /movie.mp4?token=abc HTTP/1.1\r\nHost: films.example.org\r\n\r\n".utf8), at: start + 0.01,
            into: &capture)
        for index in 0..<500 {
            let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            connection.serverSends(payload, at: start + 0.02 + Double(index) * 0.004, into: &capture)
        }
        return capture
    }

    @Test("record a capture, serve the directory, run the test: exit 0 with a verdict; the report came first")
    func recordServeRun() async throws {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-record")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let pcap = scratch + "/films.pcap"
        try Self.capture().write(to: pcap, format: .pcap)
        let replays = scratch + "/replays"
        let record = try await BuiltCommand.run(
            "wehe",
            [
                "record", "--pcap", pcap, "--client", "192.168.7.20", "--id", "films", "--name", "Films",
                "--category", "video", "--output", replays,
            ])
        #expect(record.status == 0, "\(record.stderr)")
        #expect(record.stdout.hasPrefix("Privacy"), "\(record.stdout)")
        #expect(record.stdout.contains("HTTP Host films.example.org"))
        #expect(record.stdout.contains("1 URL query values"))
        let list = try await BuiltCommand.run("wehe", ["replays", "list", "--replays", replays])
        #expect(list.stdout.contains("films") && list.stdout.contains("Films"), "\(list.stdout)")
        let data = scratch + "/data"
        try await LoopbackWorld.run(address: "127.0.0.131", replays: replays, sampleCount: 2000) { world in
            let run = try await BuiltCommand.run(
                "wehe",
                [
                    "run", "films", "--replays", replays, "--data-dir", data, "--server", world.address, "--cert",
                    world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1), "--analyzer-port",
                    String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation", "--json",
                ])
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            #expect(object["test"] as? String == "films")
            #expect(["no-differentiation", "inconclusive", "differentiation"].contains(object["verdict"] as? String))
            #expect((object["originalMeanMbps"] as? Double ?? 0) > 0)
        }
        // A damaged capture: exit 1 with one line on stderr, nothing written.
        let damaged = scratch + "/damaged.pcap"
        try Data(Array(try Data(contentsOf: URL(fileURLWithPath: pcap)).prefix(5000))).write(
            to: URL(fileURLWithPath: damaged))
        let bad = try await BuiltCommand.run(
            "wehe", ["record", "--pcap", damaged, "--client", "192.168.7.20", "--id", "x", "--output", scratch + "/x"])
        #expect(bad.status == 1, "\(bad.stderr)")
        #expect(bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/x"))
    }

    /// A UDP call: 100 datagrams up (one every 20 ms), 400 down (one every 5 ms) over 2 s.
    static func callCapture() -> SyntheticCapture {
        var capture = SyntheticCapture(link: .linuxSLL2)
        let phone = SyntheticCapture.Endpoint("192.168.7.20", 52000)
        let relay = SyntheticCapture.Endpoint("198.51.100.40", 3478)
        let start = 1_700_000_000.0
        for index in 0..<100 {
            let payload = [UInt8(index)] + [UInt8](repeating: 0x42, count: 99)
            capture.udp(at: start + Double(index) * 0.02, from: phone, to: relay, payload: payload)
        }
        for index in 0..<400 {
            let payload = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            capture.udp(at: start + 0.01 + Double(index) * 0.005, from: relay, to: phone, payload: payload)
        }
        return capture
    }

    @Test("a recorded UDP call runs the same way: the server streams the recorded datagrams")
    func recordServeRunUDP() async throws {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-record-udp")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let pcap = scratch + "/call.pcapng"
        try Self.callCapture().write(to: pcap, format: .pcapng)
        let replays = scratch + "/replays"
        let record = try await BuiltCommand.run(
            "wehe",
            [
                "record", "--pcap", pcap, "--client", "192.168.7.20", "--id", "call", "--category", "conferencing",
                "--output", replays, "--json",
            ])
        #expect(record.status == 0, "\(record.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(record.stdout.utf8)) as? [String: Any], "\(record.stdout)")
        #expect(report["transport"] as? String == "udp")
        #expect(report["bytesDown"] as? Int == 400_000)
        let data = scratch + "/data"
        try await LoopbackWorld.run(address: "127.0.0.134", replays: replays, sampleCount: 2000) { world in
            let run = try await BuiltCommand.run(
                "wehe",
                [
                    "run", "call", "--replays", replays, "--data-dir", data, "--server", world.address, "--cert",
                    world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1), "--analyzer-port",
                    String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation", "--json",
                ])
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            #expect(object["test"] as? String == "call")
            #expect((object["originalMeanMbps"] as? Double ?? 0) > 0)
        }
    }
}
