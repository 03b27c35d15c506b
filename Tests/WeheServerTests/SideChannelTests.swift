import Foundation
import NIOCore
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Side channel and replays", .timeLimit(.minutes(6)))
struct SideChannelTests {
    static func fixture(_ file: String) throws -> ReplayTrace {
        try ReplayLibrary(directory: TestResources.fixtureReplays).trace(file: file)
    }

    @Test("a TCP replay runs the full message sequence and stores the samples without the last one")
    func fullTCPSequence() async throws {
        let trace = try Self.fixture("TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.grant == "1;127.0.0.1;100")
            #expect(outcome.senderCount == "0")
            #expect(outcome.responseBytes == 120_000 + 200_000 + 80_000)
            #expect(outcome.okAfterSamples == "OK")
            #expect(outcome.okAfterResult == "OK")
            let stored = try await server.store.test(TestKey(userID: "@abcdef123", historyCount: 1))
            let replay = try #require(stored?.replay(0))
            #expect(replay.samples.mbps == [1.5, 2.5, 3.5])
            #expect(replay.samples.times == [0.1, 0.2, 0.3])
            #expect(replay.replayName == "TinyWeb-11212026")
            #expect(replay.clientDurationSeconds == 1.25)
            // The replay connection records its timing when it ends, which may be just after the side channel.
            var events = try await server.store.sessionEvents(SessionEventQuery())
            for _ in 0..<50 where !events.contains(where: { $0.kind.rawValue == "replay-timing" }) {
                try await Task.sleep(for: .milliseconds(20))
                events = try await server.store.sessionEvents(SessionEventQuery())
            }
            #expect(events.contains { $0.kind == .admissionGranted })
            #expect(events.contains { $0.kind == .replayCompleted })
            #expect(events.contains { $0.kind.rawValue == "replay-timing" && $0.detail.hasPrefix("groups 3;") })
        }
    }

    @Test("the port map covers every loaded flow with five-digit ports and the bound listening ports")
    func portMapContent() async throws {
        let trace = try Self.fixture("TinySix_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            let map = try #require(outcome.portMap)
            #expect(map.tcp["198.018.002.002"]?["00080"] == PortMap.Endpoint(host: "", port: server.tcp(80)))
            #expect(map.tcp["2001:2:0:2::2"]?["00443"] == PortMap.Endpoint(host: "", port: server.tcp(443)))
            #expect(map.tcp["198.018.002.002"]?["08081"] == PortMap.Endpoint(host: "", port: server.tcp(8081)))
            #expect(map.udp.values.flatMap(\.keys).contains("14225") == false)
            #expect(map.udp.values.flatMap { $0.values }.allSatisfy { $0.port == server.ports.udp.values.first })
            #expect(outcome.responseBytes == 153_000)
        }
    }

    @Test("a UDP replay streams the recorded datagrams between STARTED and DONE notifications")
    func udpStream() async throws {
        let trace = try Self.fixture("TinyCall_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.grant == "1;127.0.0.1;100")
            #expect(outcome.senderCount == "1")
            #expect(outcome.datagrams == trace.packets.count)
            #expect(outcome.notifications.count == 2)
            let started = try #require(outcome.notifications.first)
            let done = try #require(outcome.notifications.last)
            #expect(started.hasPrefix("STARTED;") && started.count == "STARTED;".count + 5)
            #expect(done == "DONE;" + started.dropFirst("STARTED;".count))
            #expect(outcome.okAfterSamples == "OK")
        }
    }

    @Test("a replay connection from an address without a session is told so and closed")
    func unknownReplayClient() async throws {
        try await ServerHarness.run { server in
            let connection = try await RawConnection.connect(port: server.tcp(80))
            let answer = try await connection.channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "GET /some/path HTTP/1.1\r\n\r\n"))
                var text = ""
                for try await chunk in inbound { text += String(buffer: chunk) }
                return text
            }
            #expect(answer == "SuspiciousClientIP!;127.0.0.1")
        }
    }

    @Test("WHATSMYIPMAN answers the peer address, never 127.0.0.1", arguments: ["127.0.0.1", "127.0.0.7"])
    func whatsMyIP(source: String) async throws {
        try await ServerHarness.run { server in
            let connection = try await RawConnection.connect(port: server.tcp(443), from: source)
            let answer = try await connection.channel.executeThenClose { inbound, outbound in
                try await outbound.write(
                    ByteBuffer(string: "GET /WHATSMYIPMAN HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"))
                var text = ""
                for try await chunk in inbound { text += String(buffer: chunk) }
                return text
            }
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            let body = String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? "")
            #expect(body != "127.0.0.1")
            #expect(body == (source == "127.0.0.1" ? "::1" : source))
        }
    }

    @Test("the analyzer answers singleResult with string values once both replays are in")
    func analyzerAfterTest() async throws {
        let original = try Self.fixture("TinyWeb_11212026.pcap_client_all.json")
        let control = try Self.fixture("TinyWebRandom_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.historyCount = 7
            _ = try await client.run(original, testID: 0, server: server)
            client.samples = "[[1.0,1.5,1.2,1.1,1.3,1.4],[0.1,0.2,0.3,0.4,0.5,0.6]]"
            _ = try await client.run(control, testID: 1, server: server)
            let port = try #require(server.ports.analyzerPlain)
            let analyze = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results",
                body: "testID=1&historyCount=7&userID=%40abcdef123&command=analyze")
            #expect(analyze == #"{"success": true}"#)
            let answer = try await HTTPProbe.request(
                port: port, path: "/Results?userID=@abcdef123&command=singleResult&historyCount=7&testID=1")
            let result = try SingleResult.parse(Array(answer.utf8)).get()
            #expect(result.userID == "@abcdef123")
            #expect(result.historyCount == 7)
            #expect(result.replayName == "TinyWebRandom-11212026")
            #expect(abs(result.originalMeanMbps - 2.5) < 1e-12)
            #expect(abs(result.controlMeanMbps - 1.22) < 1e-12)
            let json = try JSONValue.parse(Array(answer.utf8))
            guard case .object(let members)? = json["response"] else {
                Issue.record("no response object")
                return
            }
            // The published twelve, every value a string; these few samples also get our insufficient_data reason.
            let published = [
                "replayName", "date", "userID", "extraString", "historyCount", "testID", "area_test", "ks2_ratio_test",
                "xput_avg_original", "xput_avg_test", "ks2dVal", "ks2pVal",
            ]
            #expect(members.map(\.0) == published + ["insufficient_data"])
            #expect(members.allSatisfy { if case .string = $0.1 { true } else { false } })
            #expect(result.date.count == 19)
        }
    }
}
