import NIOCore
import NIOPosix
import Synchronization
import Testing
import WeheTestKit

@testable import WeheTestbed

@Suite("Throttling proxy over TCP (loopback)", .timeLimit(.minutes(5)))
struct TCPProxyTests {
    typealias Configuration = ThrottlingProxyConfiguration

    static let sni = Array("googlevideo".utf8)
    /// A request shaped like a TLS ClientHello carrying the SNI `r3---sn-abc.googlevideo.com`.
    static let request: [UInt8] =
        [0x16, 0x03, 0x01, 0x00, 0x40] + Array("....server_name..r3---sn-abc.googlevideo.com".utf8)

    private func configuration(
        upstreamPort: Int,
        classifier: Configuration.Classifier = .patterns([sni]),
        shaping: Configuration.Shaping? = .init(rateBitsPerSecond: 80_000, burstBytes: 4000, segmentBytes: 1000),
        loss: Configuration.Loss? = nil,
        clock: ManualClock
    ) -> Configuration {
        Configuration(
            routes: [
                .init(
                    .tcp, listen: .init(host: "127.0.0.1", port: 0),
                    upstream: .init(host: "127.0.0.1", port: upstreamPort))
            ],
            classifier: classifier,
            shaping: shaping,
            loss: loss,
            clock: clock
        )
    }

    /// One observation of the proxy while it waits on the clock: the clock time and the bytes released so far.
    struct Observation: Sendable {
        var now: Duration
        var released: Int
        var deadline: Duration
    }

    /// Runs a request through the proxy while advancing the manual clock to each deadline the proxy sleeps until.
    private func exchange(
        through proxy: ThrottlingProxy,
        port: Int,
        request: [UInt8],
        clock: ManualClock
    ) async throws -> (response: [UInt8], observations: [Observation]) {
        let observations = Recorder<Observation>()
        let response = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask { try await LoopbackPeers.tcpExchange(port: port, request: request) }
            group.addTask {
                while let deadline = await clock.nextDeadline() {
                    let observation = Observation(
                        now: clock.elapsed, released: proxy.statistics.downloadBytes, deadline: deadline)
                    observations.append(observation)
                    clock.advance(to: deadline)
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let bytes = result { return bytes }
            }
            return []
        }
        return (response, observations.all)
    }

    @Test("an unmatched flow is relayed byte for byte, unshaped, with end of stream both ways")
    func unmatchedRelay() async throws {
        let clock = ManualClock()
        let payload = LoopbackPeers.filler(300_000)
        let control = Self.request.map { ~$0 }
        try await LoopbackPeers.withTCPServer(requestLength: Int.max, response: payload) { port, received in
            let proxy = try ThrottlingProxy(configuration: configuration(upstreamPort: port, clock: clock))
            try await proxy.withRunning { bound in
                // The client half-closes after its request; the server reads to end of stream, so the response
                // arrives only if the proxy forwards the client's FIN. With a manual clock that never moves, a
                // shaped flow could not finish either.
                let response = try await LoopbackPeers.tcpExchange(
                    port: bound[0].listenAddress.port, request: control, halfClose: true)
                #expect(response == payload)
            }
            #expect(received.all == [control])
            let stats = proxy.statistics
            #expect(stats.tcpFlows == 1)
            #expect(stats.matchedFlows == 0)
            #expect(stats.shapedBytes == 0)
            #expect(stats.downloadBytes == payload.count)
            #expect(stats.uploadBytes == control.count)
            #expect(clock.elapsed == .zero)
        }
    }

    @Test("a matched flow gets one burst, then exactly the configured rate")
    func matchedPacing() async throws {
        let clock = ManualClock()
        let payload = LoopbackPeers.filler(10_000)
        try await LoopbackPeers.withTCPServer(requestLength: Self.request.count, response: payload) { port, _ in
            let proxy = try ThrottlingProxy(configuration: configuration(upstreamPort: port, clock: clock))
            let (response, observations) = try await proxy.withRunning { bound in
                try await exchange(
                    through: proxy, port: bound[0].listenAddress.port, request: Self.request, clock: clock)
            }
            #expect(response == payload)
            // 4000 bytes of burst, then 6000 bytes at 10 000 bytes/s: the last byte leaves at exactly 600 ms.
            #expect(clock.elapsed == .milliseconds(600))
            #expect(!observations.isEmpty)
            for observation in observations {
                // 10 000 bytes per second = 1 byte per 100 µs.
                let allowance = 4000 + Int(observation.now / .microseconds(100))
                #expect(observation.released <= allowance)
                #expect(observation.released > allowance - 1000)
            }
            let stats = proxy.statistics
            #expect(stats.matchedFlows == 1)
            #expect(stats.shapedBytes == payload.count)
        }
    }

    @Test("port classification shapes a flow whatever its content")
    func portClassification() async throws {
        let clock = ManualClock()
        let payload = LoopbackPeers.filler(6000)
        let control = Self.request.map { ~$0 }
        try await LoopbackPeers.withTCPServer(requestLength: control.count, response: payload) { port, _ in
            let proxy = try ThrottlingProxy(
                configuration: configuration(upstreamPort: port, classifier: .serverPorts([port]), clock: clock))
            let (response, _) = try await proxy.withRunning { bound in
                try await exchange(through: proxy, port: bound[0].listenAddress.port, request: control, clock: clock)
            }
            #expect(response == payload)
            #expect(clock.elapsed == .milliseconds(200))
            #expect(proxy.statistics.matchedFlows == 1)
        }
    }

    @Test("delayed throttling lets the first bytes through at full speed")
    func delayedThrottling() async throws {
        let clock = ManualClock()
        let payload = LoopbackPeers.filler(10_000)
        try await LoopbackPeers.withTCPServer(requestLength: Self.request.count, response: payload) { port, _ in
            let shaping = Configuration.Shaping(
                rateBitsPerSecond: 80_000, burstBytes: 1000, afterBytes: 6000, segmentBytes: 1000)
            let proxy = try ThrottlingProxy(
                configuration: configuration(upstreamPort: port, shaping: shaping, clock: clock))
            let (response, observations) = try await proxy.withRunning { bound in
                try await exchange(
                    through: proxy, port: bound[0].listenAddress.port, request: Self.request, clock: clock)
            }
            #expect(response == payload)
            // 6000 free bytes + up to 1000 of burst at once (less when a read ends inside the last segment),
            // then the rest at 10 000 bytes/s: 3000 bytes after the free ones and the burst take 300 ms.
            #expect((6001...7000).contains(observations.first?.released ?? 0))
            #expect(observations.first?.now == .zero)
            #expect(clock.elapsed == .milliseconds(300))
            #expect(proxy.statistics.shapedBytes == 4000)
        }
    }

    @Test("loss holds TCP pieces back for the stall time and loses no byte")
    func lossStalls() async throws {
        let clock = ManualClock()
        let payload = LoopbackPeers.filler(100 * 1448)
        try await LoopbackPeers.withTCPServer(requestLength: Self.request.count, response: payload) { port, _ in
            let proxy = try ThrottlingProxy(
                configuration: configuration(
                    upstreamPort: port, classifier: .nothing, shaping: nil,
                    loss: .init(probability: 0.2, tcpStall: .milliseconds(200)), clock: clock))
            let (response, _) = try await proxy.withRunning { bound in
                try await exchange(
                    through: proxy, port: bound[0].listenAddress.port, request: Self.request, clock: clock)
            }
            #expect(response == payload)
            let stalls = proxy.statistics.stalledPieces
            #expect((5...40).contains(stalls))
            #expect(clock.elapsed == .milliseconds(200) * stalls)
        }
    }

    @Test("an unreachable upstream closes the client's connection and counts a failed flow")
    func unreachableUpstream() async throws {
        let clock = ManualClock()
        // A port that refuses connections and stays reserved for the test: a closed listener's port was once
        // handed to another test's Wehe server in a full parallel run, which answered the proxy's flow.
        let refusing = try RefusingPort(host: "127.0.0.1")
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let proxy = try ThrottlingProxy(configuration: configuration(upstreamPort: port, clock: clock))
        try await proxy.withRunning { bound in
            let response = try? await LoopbackPeers.tcpExchange(
                port: bound[0].listenAddress.port, request: Self.request)
            #expect(response ?? [] == [])
        }
        #expect(proxy.statistics.failedFlows == 1)
    }

    @Test("a listening address in use is reported as bindFailed, and the sockets are released after the run")
    func bindFailure() async throws {
        let clock = ManualClock()
        let proxy = try ThrottlingProxy(configuration: configuration(upstreamPort: 9, clock: clock))
        let port = try await proxy.withRunning { bound in
            let taken = bound[0].listenAddress.port
            var clash = configuration(upstreamPort: 9, clock: clock)
            clash.routes[0].listen.port = taken
            let second = try ThrottlingProxy(configuration: clash)
            await #expect(throws: WeheTestbedError(.bindFailed, "")) { try await second.withRunning { _ in } }
            return taken
        }
        var again = configuration(upstreamPort: 9, clock: clock)
        again.routes[0].listen.port = port
        let rebound = try await ThrottlingProxy(configuration: again).withRunning { $0[0].listenAddress.port }
        #expect(rebound == port)
    }
}
