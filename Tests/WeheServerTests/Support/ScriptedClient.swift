import NIOCore
import NIOPosix
import NIOSSL
import WeheCore
import WeheWire

/// A scripted Wehe client for tests: one replay over the side channel and a replay connection, written against
/// the protocol text, with every step's answer kept for assertions.
struct ScriptedClient {
    struct Outcome {
        var grant: String
        var portMap: PortMap?
        var senderCount: String?
        var responseBytes = 0
        var datagrams = 0
        /// Digests (`DatagramReceipt`) of the received datagrams, in arrival order.
        var received: [UInt32] = []
        var notifications: [String] = []
        var okAfterSamples: String?
        var okAfterResult: String?
    }

    var userID = "@abcdef123"
    var historyCount = 1
    var source: String?
    var tls: NIOSSLContext?
    var samples = "[[1.5,2.5,3.5,4.0],[0.1,0.2,0.3,0.4]]"

    /// A throughput upload of `count` samples of 1.5 Mbit/s, `interval` seconds apart.
    static func samples(count: Int, interval: Double) -> String {
        let rates = (0..<count).map { _ in "1.5" }.joined(separator: ",")
        let times = (1...count).map { String(Double($0) * interval) }.joined(separator: ",")
        return "[[\(rates)],[\(times)]]"
    }
    /// The sending phase's duration the client reports (`DONE;<seconds>`).
    var doneSeconds = "1.25"
    /// When set, the replay connection uses a small receive buffer and waits this long after each request
    /// before reading (a reader slower than the server's writes, as on a throttled path).
    var slowReader: Duration?
    /// When set, a UDP replay sends only its first datagram until the server's stream is DONE, then the rest (a
    /// client whose sending outlasts the server's stream, or whose datagrams a loaded server reads late).
    var udpSendsAfterServerDone = false

    /// Runs one replay of `trace` with `testID`; stops after the grant when refused.
    func run(
        _ trace: ReplayTrace, testID: Int, server: ServerHarness.Running, sidePort: Int? = nil,
        host: String = "127.0.0.1"
    ) async throws -> Outcome {
        let connection = try await RawConnection.connect(
            port: sidePort ?? server.ports.sideChannelPlain ?? 0, host: host, from: source, tls: tls)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var peer = FramedPeer(inbound, outbound)
            try await peer.send(
                "\(userID);\(testID);\(trace.name);0;\(historyCount);\(testID == 1 ? "True" : "False");127.0.0.1;3.3")
            try await peer.send("[-1, null, null]")
            var outcome = Outcome(grant: try await peer.receive() ?? "<closed>")
            guard outcome.grant.hasPrefix("1;") else { return outcome }
            try await peer.send("NoIperf")
            try await peer.send("NoMobileStats")
            guard let mapText = try await peer.receive() else { return outcome }
            outcome.portMap = try PortMap(parsing: Array(mapText.utf8))
            outcome.senderCount = try await peer.receive()
            guard let flow = trace.flows.first, let map = outcome.portMap,
                let endpoint = map.endpoint(
                    udp: trace.transport == .udp, serverAddress: flow.serverAddress, serverPort: flow.serverPort)
            else { return outcome }
            if trace.transport == .tcp {
                outcome.responseBytes = try await Self.replayTCP(
                    trace, port: endpoint.port, host: host, source: source, slowReader: slowReader)
            } else {
                outcome.received = try await Self.replayUDP(
                    trace, port: endpoint.port, source: source, peer: &peer, holdBack: udpSendsAfterServerDone)
                outcome.datagrams = outcome.received.count
            }
            try await peer.send("DONE;\(doneSeconds)")
            try await peer.send(samples)
            outcome.okAfterSamples = try await peer.receiveReply()
            // A refusal (`Refused;<why>`, the samples not stored) ends the exchange: the server closes.
            guard let reply = outcome.okAfterSamples, !reply.hasPrefix("Refused;") else { return outcome }
            try await peer.send("Result;No")
            outcome.okAfterResult = try await peer.receiveReply()
            outcome.notifications = peer.notifications
            return outcome
        }
    }

    /// Sends every payload (no timing) and reads each response completely; returns the response bytes read.
    static func replayTCP(
        _ trace: ReplayTrace, port: Int, host: String = "127.0.0.1", source: String?, slowReader: Duration? = nil
    ) async throws -> Int {
        let connection = try await RawConnection.connect(
            port: port, host: host, from: source, receiveBuffer: slowReader == nil ? nil : 4096)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var received = 0
            var expected = 0
            for packet in trace.packets {
                try await outbound.write(ByteBuffer(bytes: packet.payload))
                expected += packet.responseLength
                if let slowReader { try await Task.sleep(for: slowReader) }
                while received < expected {
                    guard let chunk = try await iterator.next() else { return received }
                    received += chunk.readableBytes
                }
            }
            return received
        }
    }

    /// Sends the trace's datagrams (no timing) and collects datagrams until the side channel reports DONE.
    static func replayUDP(
        _ trace: ReplayTrace, port: Int, source: String?, peer: inout FramedPeer, holdBack: Bool = false
    ) async throws -> [UInt32] {
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: source ?? "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>(
                        wrappingChannelSynchronously: channel)
                }
            }
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        let expected = trace.packets.count
        let nioChannel = channel.channel
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: [UInt32]?.self) { group in
                group.addTask {
                    var digests: [UInt32] = []
                    do {
                        for try await envelope in inbound {
                            digests.append(envelope.data.withUnsafeReadableBytes { DatagramReceipt.digest($0) })
                            if digests.count == expected { break }
                        }
                    } catch {
                        // The channel was closed by the test after DONE.
                    }
                    return digests
                }
                let sentFirst = holdBack ? 1 : trace.packets.count
                for packet in trace.packets.prefix(sentFirst) {
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: packet.payload)))
                }
                // The server streams with the recorded timing; its DONE comes after its last datagram.
                while !peer.notifications.contains(where: { $0.hasPrefix("DONE;") }) {
                    guard let text = try await peer.receive() else { break }
                    peer.notifications.append(text)
                }
                for packet in trace.packets.dropFirst(sentFirst) {
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: packet.payload)))
                }
                // Datagrams still in flight or in the channel's buffer when DONE arrived are given up to 5 s (a loaded
                // machine may take that long to deliver them); then the channel is closed and the count is final.
                group.addTask {
                    try await Task.sleep(for: .seconds(5))
                    return nil
                }
                let first = try await group.next() ?? nil
                nioChannel.close(promise: nil)
                if let first {
                    group.cancelAll()
                    return first
                }
                for try await case let next? in group { return next }
                return []
            }
        }
    }
}
