import NIOCore
import NIOPosix
import Testing

@testable import WeheTestbed

@Suite("Throttling proxy over UDP (loopback)", .timeLimit(.minutes(5)))
struct UDPProxyTests {
    typealias Configuration = ThrottlingProxyConfiguration

    private func configuration(
        upstreamPort: Int,
        classifier: Configuration.Classifier,
        shaping: Configuration.Shaping? = nil,
        loss: Configuration.Loss? = nil,
        clock: ManualClock
    ) -> Configuration {
        Configuration(
            routes: [
                .init(
                    .udp, listen: .init(host: "127.0.0.1", port: 0),
                    upstream: .init(host: "127.0.0.1", port: upstreamPort))
            ],
            classifier: classifier,
            shaping: shaping,
            loss: loss,
            clock: clock
        )
    }

    private static let hello = Array("quic-ish hello for googlevideo".utf8)

    @Test("datagrams are relayed both ways per client address, unshaped when unmatched")
    func unmatchedRelay() async throws {
        let clock = ManualClock()
        try await LoopbackPeers.withUDPServer(replies: 5, replySize: 100) { port, received in
            let proxy = try ThrottlingProxy(
                configuration: configuration(
                    upstreamPort: port, classifier: .patterns([Array("googlevideo".utf8)]),
                    shaping: .init(rateBitsPerSecond: 8, burstBytes: 1), clock: clock))
            try await proxy.withRunning { bound in
                let proxyAddress = try SocketAddress(ipAddress: "127.0.0.1", port: bound[0].listenAddress.port)
                let control = Self.hello.map { ~$0 }
                let replies = try await LoopbackPeers.withUDPClient { inbound, outbound in
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: control)))
                    var replies: [[UInt8]] = []
                    for try await envelope in inbound {
                        #expect(envelope.remoteAddress == proxyAddress)
                        replies.append(Array(buffer: envelope.data))
                        if replies.count == 5 { break }
                    }
                    return replies
                }
                #expect(replies == (0..<5).map { [UInt8](repeating: UInt8($0), count: 100) })
                #expect(received.all == [control])
            }
            let stats = proxy.statistics
            #expect(stats.udpFlows == 1)
            #expect(stats.matchedFlows == 0)
            #expect(stats.downloadBytes == 500)
            #expect(stats.uploadBytes == Self.hello.count)
        }
    }

    @Test("a matched flow is paced, and datagrams beyond the queue limit are dropped")
    func shapedWithQueue() async throws {
        let clock = ManualClock()
        try await LoopbackPeers.withUDPServer(replies: 20, replySize: 1000) { port, _ in
            let shaping = Configuration.Shaping(rateBitsPerSecond: 80_000, burstBytes: 1000, queueLimitBytes: 3000)
            let proxy = try ThrottlingProxy(
                configuration: configuration(
                    upstreamPort: port, classifier: .patterns([Array("googlevideo".utf8)]), shaping: shaping,
                    clock: clock))
            try await proxy.withRunning { bound in
                let proxyAddress = try SocketAddress(ipAddress: "127.0.0.1", port: bound[0].listenAddress.port)
                try await LoopbackPeers.withUDPClient { inbound, outbound in
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: Self.hello)))
                    var iterator = inbound.makeAsyncIterator()
                    // All 20 replies reach the proxy while the clock stands at zero: one leaves at once, three
                    // wait in the queue (100, 200, 300 ms), sixteen overflow it.
                    let first = try await iterator.next()
                    #expect(first?.data.readableBytes == 1000)
                    #expect(await waitUntil { proxy.statistics.queueDrops == 16 })
                    #expect(clock.pendingDeadlines.filter { $0 < .seconds(1) } == [.milliseconds(100)])
                    for expected in [100, 200, 300] {
                        guard let deadline = await clock.nextDeadline() else { break }
                        #expect(deadline == .milliseconds(expected))
                        clock.advance(to: deadline)
                        let next = try await iterator.next()
                        #expect(
                            next.map { Array(buffer: $0.data) }
                                == [UInt8](repeating: UInt8(expected / 100), count: 1000))
                    }
                }
            }
            let stats = proxy.statistics
            #expect(stats.matchedFlows == 1)
            #expect(stats.shapedBytes == 4000)
            #expect(stats.downloadBytes == 4000)
        }
    }

    @Test("random loss drops datagrams towards the client only")
    func loss() async throws {
        let clock = ManualClock()
        try await LoopbackPeers.withUDPServer(replies: 150, replySize: 10) { port, received in
            let proxy = try ThrottlingProxy(
                configuration: configuration(
                    upstreamPort: port, classifier: .nothing, loss: .init(probability: 0.25), clock: clock))
            try await proxy.withRunning { bound in
                let proxyAddress = try SocketAddress(ipAddress: "127.0.0.1", port: bound[0].listenAddress.port)
                try await LoopbackPeers.withUDPClient { inbound, outbound in
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: Self.hello)))
                    #expect(
                        await waitUntil { proxy.statistics.lostDatagrams + proxy.statistics.downloadBytes / 10 == 150 })
                    let forwarded = proxy.statistics.downloadBytes / 10
                    var count = 0
                    for try await _ in inbound {
                        count += 1
                        if count == forwarded { break }
                    }
                    #expect(count == forwarded)
                }
            }
            #expect(received.all == [Self.hello])
            let lost = proxy.statistics.lostDatagrams
            // Binomial(150, 0.25): mean 37.5, sd 5.3. (150 back-to-back datagrams fit the socket buffers; a
            // few hundred would overflow them and the kernel, not the proxy, would drop some.)
            #expect((15...60).contains(lost))
        }
    }

    @Test("a flow silent for the idle timeout is forgotten; the next datagram opens a new one")
    func idleTimeout() async throws {
        let clock = ManualClock()
        try await LoopbackPeers.withUDPServer(replies: 1, replySize: 10) { port, received in
            var configuration = configuration(upstreamPort: port, classifier: .nothing, clock: clock)
            configuration.udpIdleTimeout = .seconds(30)
            let proxy = try ThrottlingProxy(configuration: configuration)
            try await proxy.withRunning { bound in
                let proxyAddress = try SocketAddress(ipAddress: "127.0.0.1", port: bound[0].listenAddress.port)
                try await LoopbackPeers.withUDPClient { inbound, outbound in
                    var iterator = inbound.makeAsyncIterator()
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: [1])))
                    _ = try await iterator.next()
                    #expect(await clock.nextDeadline() == .seconds(30))
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: [2])))
                    _ = try await iterator.next()
                    #expect(proxy.statistics.udpFlows == 1)
                    clock.advance(to: .seconds(30))
                    #expect(await waitUntil { proxy.statistics.expiredFlows == 1 })
                    try await outbound.write(
                        AddressedEnvelope(remoteAddress: proxyAddress, data: ByteBuffer(bytes: [3])))
                    _ = try await iterator.next()
                    #expect(proxy.statistics.udpFlows == 2)
                }
            }
            #expect(received.all == [[1], [2], [3]])
        }
    }
}
