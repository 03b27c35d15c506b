import Foundation
import NIOCore
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// The side channel's change spec (protocol.md 5.2 #2): parsing, validation against the replay's server packets, and
/// a replay that sends the altered bytes (analysis.md section 5.4 item 6).
@Suite("Change spec (DPI server packets)", .timeLimit(.minutes(6)))
struct ChangeSpecTests {
    static func catalogue(_ directory: String = TestResources.fixtureReplays) throws -> ReplayCatalogue {
        try ReplayCatalogue(directory: directory, logger: ServerHarness.logger)
    }

    static func parse(_ text: String) throws -> ServerPacketChange? {
        try ServerPacketChange.parse(Array(text.utf8))
    }

    /// The byte at `index` of recorded response burst `group` in the test's server trace.
    static func recorded(_ index: Int, group: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: index &* 7 &+ group &* 31 &+ 1)
    }

    /// A replay directory holding TinyWeb with a server trace whose bursts are recorded as 10 000-byte segments.
    static func recordedReplayDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("wehe-change-spec-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = "TinyWeb_11212026.pcap_client_all.json"
        try FileManager.default.copyItem(
            atPath: TestResources.fixtureReplays + "/" + file, toPath: directory + "/" + file)
        let client = try ReplayLibrary(directory: directory).trace(file: file)
        var server = ServerTrace(derivingFrom: client)
        for (index, group) in server.tcpFlows[0].groups.enumerated() where group.responseLength > 0 {
            let bytes = (0..<group.responseLength).map { recorded($0, group: index) }
            server.tcpFlows[0].groups[index].segments = stride(from: 0, to: bytes.count, by: 10_000).map {
                ServerSegment(offset: 0, payload: Array(bytes[$0..<min($0 + 10_000, bytes.count)]))
            }
        }
        try ServerTraceCodec().encode(server).write(
            toFile: directory + "/TinyWeb_11212026.wehe_server.json", atomically: true, encoding: .utf8)
        return directory
    }

    // MARK: parsing

    @Test("the no-change spec parses to no change; ReplaceI, ReplaceR, ReplaceW, Invert and Random parse")
    func parsesActions() throws {
        #expect(try Self.parse("[-1, null, null]") == nil)
        #expect(try Self.parse("[-1,null,null]") == nil)
        let invert = try #require(try Self.parse("[3, \"ReplaceI\", [10, 20]]"))
        #expect(invert == ServerPacketChange(packetNumber: 3, action: .invertRegion(10..<20)))
        #expect(try Self.parse("[1, \"ReplaceR\", [0, 4]]")?.action == .randomizeRegion(0..<4))
        #expect(
            try Self.parse("[2, \"ReplaceW\", [5, \"abc\"]]")?.action == .overwrite(offset: 5, bytes: [97, 98, 99]))
        #expect(try Self.parse("[2, \"Invert\", null]")?.action == .invertAll)
        #expect(try Self.parse("[2, \"Random\", null]")?.action == .randomizeAll)
    }

    @Test(
        "malformed change specs are refused with a sentence naming the problem",
        arguments: [
            ("{\"a\":1}", "JSON array"),
            ("[1, \"ReplaceI\"]", "JSON array"),
            ("not json", "not JSON"),
            ("[0, \"ReplaceI\", [1, 2]]", "neither -1"),
            ("[-3, \"ReplaceI\", [1, 2]]", "neither -1"),
            ("[\"1\", \"ReplaceI\", [1, 2]]", "must be an integer"),
            ("[1.5, \"ReplaceI\", [1, 2]]", "must be an integer"),
            ("[1, \"replacel\", [1, 2]]", "unknown change spec action 'replacel'"),
            ("[1, 7, [1, 2]]", "action must be a string"),
            ("[1, \"ReplaceI\", [5, 5]]", "empty or negative"),
            ("[1, \"ReplaceI\", [-2, 5]]", "empty or negative"),
            ("[1, \"ReplaceI\", [1]]", "two integers"),
            ("[1, \"ReplaceI\", null]", "two integers"),
            ("[1, \"ReplaceI\", [1, 99999999999999999999999]]", "two integers"),
            ("[1, \"ReplaceW\", [1, \"\"]]", "non-empty text"),
            ("[1, \"Invert\", [1, 2]]", "takes no spec"),
        ])
    func refusesMalformed(text: String, expected: String) throws {
        let error = try #require(throws: ReplayServerError.self) { try Self.parse(text) }
        #expect(error.code == .protocolViolation)
        #expect(error.message.contains(expected), "\(error.message)")
    }

    // MARK: applying to a replay

    @Test("ReplaceI inverts exactly [L, R) of the named recorded segment and nothing else")
    func invertsRecordedSegment() throws {
        let directory = try Self.recordedReplayDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let replay = try #require(try Self.catalogue(directory).replay(named: "TinyWeb-11212026"))
        // 120 000, 200 000 and 80 000 bytes in 10 000-byte segments: 12 + 20 + 8 packets.
        #expect(replay.serverPacketLengths == Array(repeating: 10_000, count: 40))
        let changed = try replay.applying(ServerPacketChange(packetNumber: 13, action: .invertRegion(100..<300)))
        let before = replay.server.tcpFlows[0].groups.flatMap { $0.segments ?? [] }
        let after = changed.server.tcpFlows[0].groups.flatMap { $0.segments ?? [] }
        #expect(before.count == 40 && after.count == 40)
        for index in 0..<40 where index != 12 { #expect(before[index] == after[index]) }
        let expected = before[12].payload.enumerated().map {
            (100..<300).contains($0.offset) ? ~$0.element : $0.element
        }
        #expect(after[12].payload == expected)
        #expect(after[12].payload[99] == Self.recorded(99, group: 1))
        #expect(after[12].payload[100] == ~Self.recorded(100, group: 1))
        #expect(after[12].payload[299] == ~Self.recorded(299, group: 1))
        #expect(after[12].payload[300] == Self.recorded(300, group: 1))
    }

    @Test("a burst without recorded content is one packet: ReplaceI turns its filler into recorded inverted bytes")
    func invertsFillerBurst() throws {
        let replay = try #require(try Self.catalogue().replay(named: "TinyWeb-11212026"))
        #expect(replay.serverPacketLengths == [120_000, 200_000, 80_000])
        let changed = try replay.applying(ServerPacketChange(packetNumber: 2, action: .invertRegion(10..<50)))
        let groups = changed.server.tcpFlows[0].groups
        #expect(groups[0].segments == nil && groups[2].segments == nil)
        let payload = try #require(groups[1].segments?.first?.payload)
        #expect(groups[1].segments?.count == 1)
        #expect(payload.count == 200_000)
        #expect(payload[10..<50].allSatisfy { $0 == 0xFF })
        #expect(payload[..<10].allSatisfy { $0 == 0 } && payload[50...].allSatisfy { $0 == 0 })
        #expect(changed.serverPacketLengths == replay.serverPacketLengths)
    }

    @Test("the other actions keep the packet's length and touch only their region")
    func otherActions() throws {
        let replay = try #require(try Self.catalogue().replay(named: "TinyWeb-11212026"))
        func burst(_ change: ServerPacketChange) throws -> [UInt8] {
            try #require(try replay.applying(change).server.tcpFlows[0].groups[2].segments?.first?.payload)
        }
        let written = try burst(ServerPacketChange(packetNumber: 3, action: .overwrite(offset: 7, bytes: [65, 66])))
        #expect(written.count == 80_000 && written[7] == 65 && written[8] == 66 && written[6] == 0 && written[9] == 0)
        let inverted = try burst(ServerPacketChange(packetNumber: 3, action: .invertAll))
        #expect(inverted.count == 80_000 && inverted.allSatisfy { $0 == 0xFF })
        // Random bytes: 64 zero bytes in a row from a uniform source have probability 2^-512.
        let random = try burst(ServerPacketChange(packetNumber: 3, action: .randomizeRegion(1000..<1064)))
        #expect(random.count == 80_000 && random[1000..<1064].contains { $0 != 0 })
        #expect(random[..<1000].allSatisfy { $0 == 0 } && random[1064...].allSatisfy { $0 == 0 })
        let whole = try burst(ServerPacketChange(packetNumber: 3, action: .randomizeAll))
        #expect(whole.count == 80_000 && whole.contains { $0 != 0 })
    }

    @Test("UDP: the server's datagrams are numbered and the named one altered (echoed client datagrams included)")
    func udpDatagram() throws {
        let replay = try #require(try Self.catalogue().replay(named: "TinyCall-11212026"))
        let flow = try #require(replay.server.udpFlows.first)
        let schedule = replay.udpSchedule(for: flow).filter { !$0.payload.isEmpty }
        #expect(replay.serverPacketLengths == schedule.map(\.payload.count))
        let changed = try replay.applying(ServerPacketChange(packetNumber: 2, action: .invertRegion(0..<4)))
        let altered = try #require(changed.server.udpFlows.first?.datagrams).filter { !$0.payload.isEmpty }
        #expect(altered.count == schedule.count)
        #expect(Array(altered[1].payload[0..<4]) == schedule[1].payload[0..<4].map { ~$0 })
        #expect(altered[1].payload[4...] == schedule[1].payload[4...])
        #expect(altered[0] == schedule[0] && altered.last == schedule.last)
    }

    @Test(
        "a packet the replay does not have, or a region outside it, is refused",
        arguments: [
            (ServerPacketChange(packetNumber: 4, action: .invertRegion(0..<1)), "has 3 server packets"),
            (ServerPacketChange(packetNumber: 1_000_000, action: .invertAll), "does not exist"),
            (ServerPacketChange(packetNumber: 3, action: .invertRegion(79_990..<80_001)), "which has 80000 bytes"),
            (ServerPacketChange(packetNumber: 1, action: .randomizeRegion(120_000..<120_001)), "outside S_1"),
            (ServerPacketChange(packetNumber: 3, action: .overwrite(offset: 79_999, bytes: [1, 2])), "outside S_3"),
        ])
    func refusesOutOfRange(change: ServerPacketChange, expected: String) throws {
        let replay = try #require(try Self.catalogue().replay(named: "TinyWeb-11212026"))
        let error = try #require(throws: ReplayServerError.self) { try replay.applying(change) }
        #expect(error.message.contains(expected), "\(error.message)")
    }

    // MARK: end to end

    @Test("a client declaring ReplaceI on a recorded TCP server packet receives exactly those bytes inverted")
    func replayWithInvertedRegion() async throws {
        let directory = try Self.recordedReplayDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = try ReplayLibrary(directory: directory).trace(file: "TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run(replays: directory) { server in
            let probe = try await DPIProbeClient.run(
                trace, changeSpec: "[13, \"ReplaceI\", [100, 300]]", server: server)
            #expect(probe.grant == "1;127.0.0.1;100")
            #expect(probe.okAfterSamples == "OK")
            // Bursts of 120 000, 200 000 and 80 000 bytes; S_13 is the first segment of the second burst.
            var expected = (0..<120_000).map { Self.recorded($0, group: 0) }
            expected += (0..<200_000).map { Self.recorded($0, group: 1) }
            expected += (0..<80_000).map { Self.recorded($0, group: 2) }
            for index in 120_100..<120_300 { expected[index] = ~expected[index] }
            #expect(probe.response.count == expected.count)
            let wrong = expected.indices.filter { $0 < probe.response.count && probe.response[$0] != expected[$0] }
            #expect(wrong.isEmpty, "\(wrong.count) bytes differ, first at \(wrong.first ?? -1)")
            // Without a change spec the same replay sends the recorded bytes.
            #expect(try await server.waitForSessions(atMost: 0))
            let plain = try await DPIProbeClient.run(trace, changeSpec: "[-1, null, null]", server: server)
            #expect(plain.response.count == 400_000)
            #expect(plain.response[120_100] == Self.recorded(100, group: 1))
            let differing = (120_099..<120_301).filter { plain.response[$0] != probe.response[$0] }
            #expect(differing == Array(120_100..<120_300))
        }
    }

    @Test("a replay without recorded content sends 0xFF in the inverted region of its zero filler")
    func replayFillerInverted() async throws {
        let trace = try SideChannelTests.fixture("TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            let probe = try await DPIProbeClient.run(trace, changeSpec: "[2, \"ReplaceI\", [10, 50]]", server: server)
            #expect(probe.grant == "1;127.0.0.1;100")
            #expect(probe.response.count == 400_000)
            let inverted = probe.response.indices.filter { probe.response[$0] != 0 }
            #expect(inverted.count == 40 && inverted.first == 120_010 && inverted.last == 120_049)
            #expect(inverted.allSatisfy { probe.response[$0] == 0xFF })
        }
    }

    @Test("UDP: the server sends the named datagram with its region inverted and the others unchanged")
    func udpReplayInverted() async throws {
        let trace = try SideChannelTests.fixture("TinyCall_11212026.pcap_client_all.json")
        let replay = try #require(try Self.catalogue().replay(named: trace.name))
        let schedule = replay.udpSchedule(for: try #require(replay.server.udpFlows.first))
        let payloads = schedule.map(\.payload).filter { !$0.isEmpty }
        #expect(payloads.count >= 2 && Set(payloads).count == payloads.count)
        let altered = payloads[1].enumerated().map { $0.offset < 4 ? ~$0.element : $0.element }
        try await ServerHarness.run { server in
            let (_, received) = try await DPIProbeClient.runUDP(
                trace, changeSpec: "[2, \"ReplaceI\", [0, 4]]", server: server)
            // Empty datagrams are sent too (they are not numbered); S_2 is the second non-empty one.
            var expected = schedule.map { DatagramReceipt.digest($0.payload) }
            let second = try #require(schedule.indices.filter { !schedule[$0].payload.isEmpty }.dropFirst().first)
            expected[second] = DatagramReceipt.digest(altered)
            #expect(received.count == expected.count)
            #expect(received.sorted() == expected.sorted())
            #expect(!received.contains(DatagramReceipt.digest(payloads[1])))
        }
    }

    @Test("UDP: a Slice spec is granted with ';slice' and the server sends the opening and the slice, moved up")
    func udpSlice() async throws {
        let trace = try SideChannelTests.fixture("TinyCall_11212026.pcap_client_all.json")
        let replay = try #require(try Self.catalogue().replay(named: trace.name))
        let schedule = replay.udpSchedule(for: try #require(replay.server.udpFlows.first))
        // TinyCall's call, its first 0.05 s and 0.3 s from 0.6 s on.
        let slice = try #require(UDPSlice(openingSeconds: 0.05, from: 0.599, seconds: 0.3))
        let expected = schedule.sliced(slice)
        #expect(expected.count > 1 && expected.count < schedule.count)
        #expect(expected.first?.payload == schedule.first?.payload)
        #expect(expected.map(\.offset).allSatisfy { $0 < slice.length })
        try await ServerHarness.run { server in
            let (grant, received) = try await DPIProbeClient.runUDP(
                trace.slice(slice), changeSpec: slice.changeSpec, server: server)
            #expect(grant == "1;127.0.0.1;100;slice")
            #expect(received.sorted() == expected.map { DatagramReceipt.digest($0.payload) }.sorted())
            // The spec every other client sends still gets the published grant and the whole call.
            let (plainGrant, whole) = try await DPIProbeClient.runUDP(
                trace, changeSpec: SideChannelMessage.noChange, server: server)
            #expect(plainGrant == "1;127.0.0.1;100")
            #expect(whole.count == schedule.count)
        }
    }

    @Test(
        "a bad change spec is refused on the side channel with 0;5 and a reason, logged, and the server keeps serving",
        arguments: [
            ("[-1, \"Slice\", [1, 0.5, 2]]", "openingSeconds ≤ from"),
            ("[-1, \"Slice\", [0, 0.5]]", "needs [openingSeconds, from, seconds]"),
            ("[-1, \"Slice\", [0, 0.5, 1]]", "applies to a UDP replay of one flow"),
            ("[99, \"ReplaceI\", [10, 20]]", "does not exist"),
            ("[1, \"replacel\", [10, 20]]", "unknown change spec action"),
            ("[1, \"ReplaceI\", [119990, 120010]]", "outside S_1"),
            ("[1, \"ReplaceI\", \"x\"]", "two integers"),
        ])
    func refusedOnTheWire(spec: String, reason: String) async throws {
        let trace = try SideChannelTests.fixture("TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            let refused = try await DPIProbeClient.run(trace, changeSpec: spec, server: server)
            #expect(refused.grant.hasPrefix("0;5;"), "\(refused.grant)")
            #expect(refused.grant.contains(reason), "\(refused.grant)")
            let closed = refused.closedAfterRefusal
            #expect(closed)
            #expect(
                try PermissionReply(parsing: Array(refused.grant.utf8)) == .denied(.changeSpecRefused, sampleCount: nil)
            )
            // The server records the failure as it closes the connection, which may be just after the client saw it.
            var events = try await server.store.sessionEvents(SessionEventQuery())
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(10)
            while clock.now < deadline, !events.contains(where: { $0.kind == .error }) {
                try await Task.sleep(for: .milliseconds(10))
                events = try await server.store.sessionEvents(SessionEventQuery())
            }
            #expect(events.contains { $0.kind == .error && $0.detail.contains("change spec refused") })
            #expect(!events.contains { $0.kind == .admissionGranted })
            // The server is still up and serves the next client.
            let next = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(next.grant == "1;127.0.0.1;100")
            #expect(next.responseBytes == 400_000)
        }
    }
}

/// One TCP replay with a change spec, keeping every response byte.
enum DPIProbeClient {
    struct Outcome {
        var grant: String
        var response: [UInt8] = []
        var okAfterSamples: String?
        var closedAfterRefusal = false
    }

    static func run(_ trace: ReplayTrace, changeSpec: String, server: ServerHarness.Running) async throws -> Outcome {
        let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var peer = FramedPeer(inbound, outbound)
            try await peer.send("@dpiprobe1;0;\(trace.name);0;1;False;127.0.0.1;3.3")
            try await peer.send(changeSpec)
            var outcome = Outcome(grant: try await peer.receive() ?? "<closed>")
            guard outcome.grant.hasPrefix("1;") else {
                outcome.closedAfterRefusal = try await peer.receive() == nil
                return outcome
            }
            try await peer.send("NoIperf")
            try await peer.send("NoMobileStats")
            guard let mapText = try await peer.receive() else { return outcome }
            let map = try PortMap(parsing: Array(mapText.utf8))
            _ = try await peer.receive()
            let flow = try #require(trace.flows.first)
            let endpoint = try #require(
                map.endpoint(udp: false, serverAddress: flow.serverAddress, serverPort: flow.serverPort))
            outcome.response = try await replay(trace, port: endpoint.port)
            try await peer.send("DONE;1.0")
            try await peer.send("[[1.0,2.0],[0.1,0.2]]")
            outcome.okAfterSamples = try await peer.receiveReply()
            try await peer.send("Result;No")
            _ = try await peer.receiveReply()
            return outcome
        }
    }

    /// One UDP replay with a change spec; returns the grant and the digests of the datagrams received.
    static func runUDP(_ trace: ReplayTrace, changeSpec: String, server: ServerHarness.Running) async throws
        -> (grant: String, received: [UInt32])
    {
        let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var peer = FramedPeer(inbound, outbound)
            try await peer.send("@dpiprobe2;0;\(trace.name);0;1;False;127.0.0.1;3.3")
            try await peer.send(changeSpec)
            let grant = try await peer.receive() ?? "<closed>"
            try #require(grant.hasPrefix("1;"), "\(grant)")
            try await peer.send("NoIperf")
            try await peer.send("NoMobileStats")
            let map = try PortMap(parsing: Array(try #require(try await peer.receive()).utf8))
            _ = try await peer.receive()
            let flow = try #require(trace.flows.first)
            let endpoint = try #require(
                map.endpoint(udp: true, serverAddress: flow.serverAddress, serverPort: flow.serverPort))
            let received = try await ScriptedClient.replayUDP(trace, port: endpoint.port, source: nil, peer: &peer)
            try await peer.send("DONE;1.0")
            try await peer.send("[[1.0,2.0],[0.1,0.2]]")
            _ = try await peer.receiveReply()
            return (grant, received)
        }
    }

    private static func replay(_ trace: ReplayTrace, port: Int) async throws -> [UInt8] {
        let connection = try await RawConnection.connect(port: port)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var received: [UInt8] = []
            var expected = 0
            for packet in trace.packets {
                try await outbound.write(ByteBuffer(bytes: packet.payload))
                expected += packet.responseLength
                while received.count < expected {
                    guard let chunk = try await iterator.next() else { return received }
                    received += chunk.readableBytesView
                }
            }
            return received
        }
    }
}
