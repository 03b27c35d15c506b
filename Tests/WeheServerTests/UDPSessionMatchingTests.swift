import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
import WeheCore
import WeheServer
import WeheTestKit
import WeheWire

/// Which UDP session a datagram starts: a shaper's upload queue can release the last datagrams of
/// an address's previous replay after its next session was admitted; they must not take that session, whose stream
/// would then go to the old, closed port.
@Suite("UDP replays are matched to their session", .timeLimit(.minutes(6)))
struct UDPSessionMatchingTests {
    static let original = "TinyCall_11212026.pcap_client_all.json"
    static let control = "TinyCallRandom_11212026.pcap_client_all.json"

    static func fixture(_ file: String) throws -> ReplayTrace {
        try ReplayLibrary(directory: TestResources.fixtureReplays).trace(file: file)
    }

    @Test("leftover datagrams of the previous replay, from its old port, do not take the next session")
    func leftoverDatagramsFromTheOldPort() async throws {
        let first = try Self.fixture(Self.original)
        let second = try Self.fixture(Self.control)
        try await ServerHarness.run { server in
            let old = try await ClientSocket.open()
            let fresh = try await ClientSocket.open()
            let firstStart = try await Self.replay(first, testID: 0, server: server) { port in
                try await old.send(first.packets.map(\.payload), to: port)
            }
            #expect(firstStart == old.port)
            #expect(try await server.waitForSessions(atMost: 0))
            let before = old.received
            let secondStart = try await Self.replay(second, testID: 1, server: server) { port in
                // The previous replay's last datagrams arrive first (they left the shaper's queue late), then the
                // next replay from its own socket.
                try await old.send(first.packets.suffix(10).map(\.payload), to: port)
                try await fresh.send(second.packets.map(\.payload), to: port)
            }
            #expect(secondStart == fresh.port, "the second replay was streamed to port \(secondStart ?? 0)")
            #expect(try await fresh.waitForDatagrams(second.packets.count))
            #expect(old.received == before, "the old port received \(old.received - before) datagrams")
            await old.close()
            await fresh.close()
        }
    }

    @Test("the next replay may come from the port the previous one used, when its datagrams open it")
    func reusedPortWithTheRightContent() async throws {
        let first = try Self.fixture(Self.original)
        let second = try Self.fixture(Self.control)
        try await ServerHarness.run { server in
            let socket = try await ClientSocket.open()
            let firstStart = try await Self.replay(first, testID: 0, server: server) { port in
                try await socket.send(first.packets.map(\.payload), to: port)
            }
            #expect(firstStart == socket.port)
            #expect(try await server.waitForSessions(atMost: 0))
            let secondStart = try await Self.replay(second, testID: 1, server: server) { port in
                try await socket.send(second.packets.map(\.payload), to: port)
            }
            #expect(secondStart == socket.port)
            await socket.close()
        }
    }

    @Test("a client whose datagrams differ from the trace still starts its replay from a new port")
    func unrecognisedContentFromANewPort() async throws {
        let trace = try Self.fixture(Self.original)
        try await ServerHarness.run { server in
            let socket = try await ClientSocket.open()
            let start = try await Self.replay(trace, testID: 0, server: server) { port in
                try await socket.send(trace.packets.map { $0.payload.map { $0 &+ 1 } }, to: port)
            }
            #expect(start == socket.port)
            #expect(try await socket.waitForDatagrams(trace.packets.count))
            await socket.close()
        }
    }

    @Test("a replay the client ended early gets no more of the server's stream")
    func streamStopsWhenTheSessionEnds() async throws {
        // The small call stretched to 24 s: the session ends long before the stream would, even on a loaded machine
        // (with the 1.2-s original, a busy test run finished the whole stream before the side channel closed).
        let directory = TestResources.temporaryDirectory("wehe-long-call")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = TestResources.fixtureReplays + "/" + Self.original
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: source))) as? [Any])
        let packets = try #require(json.first as? [[String: Any]])
        json[0] = packets.map { packet in
            var stretched = packet
            stretched["timestamp"] = ((packet["timestamp"] as? Double) ?? 0) * 20
            return stretched
        }
        try JSONSerialization.data(withJSONObject: json).write(
            to: URL(fileURLWithPath: directory + "/" + Self.original))
        let trace = try ReplayLibrary(directory: directory).trace(file: Self.original)
        try await ServerHarness.run(replays: directory) { server in
            let socket = try await ClientSocket.open()
            // The client sends its first datagram and ends the test as soon as the stream started (an adaptive
            // round's end, or a client's time limit).
            let start = try await Self.replay(trace, testID: 0, server: server, waitForStream: false) { port in
                try await socket.send([trace.packets[0].payload], to: port)
            }
            #expect(start == socket.port)
            #expect(try await server.waitForSessions(atMost: 0))
            let atEnd = socket.received
            // The stream sends about two datagrams a second: had it gone on, some six would arrive in 3 s.
            try await Task.sleep(for: .seconds(3))
            #expect(socket.received <= atEnd + 1, "\(socket.received - atEnd) datagrams after the session ended")
            #expect(socket.received < trace.packets.count)
            await socket.close()
        }
    }

    /// Runs one UDP replay's side channel: admission, port map, sender count; `send` sends the datagrams to the
    /// replay's listening port; then waits for the stream's `DONE` (or with `waitForStream` false only for its
    /// `STARTED`) and ends the test. Returns the client port the server announced in `STARTED` (nil when no stream
    /// started).
    static func replay(
        _ trace: ReplayTrace, testID: Int, server: ServerHarness.Running, waitForStream: Bool = true,
        send: @Sendable (Int) async throws -> Void
    ) async throws -> Int? {
        let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var peer = FramedPeer(inbound, outbound)
            try await peer.send(
                "@udpmatch01;\(testID);\(trace.name);0;1;\(testID == 1 ? "True" : "False");127.0.0.1;3.3")
            try await peer.send("[-1, null, null]")
            let grant = try await peer.receive()
            try #require(grant?.hasPrefix("1;") == true, "grant \(grant ?? "<closed>")")
            try await peer.send("NoIperf")
            try await peer.send("NoMobileStats")
            let map = try PortMap(parsing: Array((try await peer.receive() ?? "").utf8))
            #expect(try await peer.receive() == "1")
            let flow = try #require(trace.flows.first)
            let endpoint = try #require(
                map.endpoint(udp: true, serverAddress: flow.serverAddress, serverPort: flow.serverPort))
            try await send(endpoint.port)
            var started: Int?
            while let text = try await peer.receive() {
                if text.hasPrefix("STARTED;") { started = Int(text.dropFirst("STARTED;".count)) }
                if text.hasPrefix("DONE;") || (!waitForStream && started != nil) { break }
            }
            try await peer.send("DONE;1.25")
            try await peer.send("[[1.5,2.5,3.5,4.0],[0.1,0.2,0.3,0.4]]")
            #expect(try await peer.receiveReply() == "OK")
            try await peer.send("Result;No")
            #expect(try await peer.receiveReply() == "OK")
            return started
        }
    }
}

/// A client UDP socket on 127.0.0.1 that counts the datagrams it receives.
final class ClientSocket: Sendable {
    let channel: any Channel
    let port: Int
    private let count: Counter

    private init(channel: any Channel, count: Counter) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.count = count
    }

    static func open() async throws -> ClientSocket {
        let count = Counter()
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(CountingHandler(count: count))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ClientSocket(channel: channel, count: count)
    }

    /// Datagrams received so far.
    var received: Int { count.value.withLock { $0 } }

    func send(_ payloads: [[UInt8]], to port: Int) async throws {
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        for payload in payloads {
            try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: payload)))
                .get()
        }
    }

    /// Waits (up to 10 s) until `count` datagrams arrived; returns whether they did.
    func waitForDatagrams(_ expected: Int) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(10))
        while received < expected, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return received >= expected
    }

    func close() async { try? await channel.close().get() }

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    final class CountingHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let count: Counter
        init(count: Counter) { self.count = count }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { count.value.withLock { $0 += 1 } }
    }
}
