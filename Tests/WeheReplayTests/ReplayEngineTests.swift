import Synchronization
import Testing
import WeheCore
import WeheReplay
import WeheTestKit
import WeheWire

/// Builds small traces.
enum Traces {
    static let tcpPair = CSPair(clientAddress: "10.0.0.2", clientPort: 50000, serverAddress: "1.2.3.4", serverPort: 443)
    static let udpPair = CSPair(
        clientAddress: "10.0.0.2", clientPort: 14225, serverAddress: "1.2.3.4", serverPort: 63308)

    static func tcp(_ packets: [(time: Double, size: Int, response: Int)], name: String = "Test-01012024")
        -> ReplayTrace
    {
        ReplayTrace(
            packets: packets.map { packet in
                ReplayPacket(
                    csPair: tcpPair,
                    payload: [UInt8](repeating: 0x41, count: packet.size),
                    timestamp: packet.time,
                    kind: .tcp(
                        responseLength: packet.response,
                        responseHash: packet.response > 0 ? String(repeating: "a", count: 40) : nil)
                )
            },
            udpClientPorts: [],
            tcpCSPairs: [tcpPair.rawValue],
            name: name
        )
    }

    static func udp(_ packets: [(time: Double, size: Int)]) -> ReplayTrace {
        ReplayTrace(
            packets: packets.map {
                ReplayPacket(
                    csPair: udpPair, payload: [UInt8](repeating: 7, count: $0.size), timestamp: $0.time,
                    kind: .udp(end: false))
            },
            udpClientPorts: ["14225"],
            tcpCSPairs: [],
            name: "Call-01012024"
        )
    }
}

@Suite("replay engine on a manual clock")
struct ReplayEngineTests {
    func engine(
        _ clock: ManualClock,
        timing: Bool = true,
        deadline: Duration = .seconds(45),
        interval: Duration = .milliseconds(100),
        idle: Duration = .seconds(30)
    ) -> ReplayEngine<ManualClock> {
        ReplayEngine(
            configuration: ReplayEngineConfiguration(
                timing: timing, deadline: deadline, sampleInterval: interval, idleTimeout: idle),
            clock: clock)
    }

    @Test("with timing, every payload goes at its recorded time and never earlier, in order")
    func timedSends() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .milliseconds(5)))
        let trace = Traces.tcp([(0, 100, 0), (0.25, 200, 1000), (1.5, 50, 0), (2.0, 10, 500)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        let times = transport.sent.map(\.at)
        #expect(transport.sent.map(\.index) == [0, 1, 2, 3])
        #expect(times == [.zero, .milliseconds(250), .milliseconds(1500), .seconds(2)])
        #expect(outcome.packetsSent == 4)
        #expect(outcome.bytesSent == 360)
        #expect(outcome.bytesReceived == 1500)
        #expect(outcome.scheduleLateness.count == 4)
        #expect(outcome.scheduleLateness.maximum == .zero)
        #expect(transport.closeCount == 1)
    }

    @Test("a packet whose time has passed while a response was read goes at once, and lateness says by how much")
    func latenessIsMeasured() async throws {
        let clock = ManualClock()
        // The response to packet 0 takes 10 ms latency + 100 kB at 1 MB/s ≈ 110 ms; packet 1 is due at 50 ms.
        let transport = InMemoryTransport(
            clock: clock, script: .init(latency: .milliseconds(10), bytesPerSecond: 1_000_000))
        let trace = Traces.tcp([(0, 10, 100_000), (0.05, 10, 0), (0.5, 10, 0)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        #expect(transport.sent[1].at == .milliseconds(110))
        #expect(outcome.scheduleLateness.maximum == .milliseconds(60))
        #expect(outcome.scheduleLateness.median == .zero)
        // The engine itself was never late: packet 1 went the moment its predecessor's response was complete.
        #expect(outcome.engineLateness.maximum == .zero)
        #expect(transport.sent[2].at == .milliseconds(500))
    }

    @Test("a slow send makes the next packet late against its schedule, measured per send")
    func slowSendLateness() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(slowSend: (index: 0, cost: .milliseconds(3))))
        let trace = Traces.tcp([(0, 10, 0), (0.001, 10, 0), (0.002, 10, 0), (0.010, 10, 0)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        #expect(transport.sent.map(\.at) == [.zero, .milliseconds(3), .milliseconds(3), .milliseconds(10)])
        #expect(outcome.scheduleLateness.maximum == .milliseconds(2))
        #expect(outcome.scheduleLateness.p99 == .milliseconds(2))
        #expect(outcome.scheduleLateness.median == .zero)
    }

    @Test("port tests (timing off) send as fast as responses allow")
    func untimedSends() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .milliseconds(1)))
        let trace = Traces.tcp([(0, 10, 0), (5, 10, 0), (9, 10, 0)], name: "port_8080")
        let outcome = try await engine(clock, timing: false).run(trace: trace, transport: transport)
        #expect(transport.sent.map(\.at) == [.zero, .zero, .zero])
        #expect(outcome.scheduleLateness.count == 0)
        // Only the in-memory transport's drain (one latency) takes time.
        #expect(outcome.duration == .milliseconds(1))
    }

    @Test("bytes land in the interval in which they arrive; Mbit/s = bytes / 125000 / Δ; last interval partial")
    func samplesFollowTheFormula() async throws {
        let clock = ManualClock()
        // 1 MB/s, 0 latency: 100 kB per 100 ms interval → 8 Mbit/s.
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .zero, bytesPerSecond: 1_000_000))
        let trace = Traces.tcp([(0, 10, 409_600)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        let samples = outcome.samples
        #expect(outcome.duration == .milliseconds(409) + .microseconds(600))
        #expect(samples.count == 5)
        #expect(samples.times == [0.1, 0.2, 0.30000000000000004, 0.4, 0.5])
        // Chunks of 4096 bytes arrive every 4.096 ms: 24 or 25 chunks per interval.
        for value in samples.mbps.prefix(4) {
            #expect(value > 7.8 && value < 8.2)
        }
        #expect(abs(bytesCarried(samples.mbps, interval: 0.1) - 409_600) < 1e-6)
        #expect(samples.mbps[4] < 1)
    }

    @Test("the deadline ends a replay normally: no packet starts after it, a read is cut there")
    func deadline() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .zero, bytesPerSecond: 100_000))
        // 1 MB at 100 kB/s would take 10 s; the deadline is 3 s.
        let trace = Traces.tcp([(0, 10, 1_000_000), (0.5, 10, 0), (8, 10, 0)])
        let outcome = try await engine(clock, deadline: .seconds(3)).run(trace: trace, transport: transport)
        #expect(outcome.reachedDeadline)
        #expect(outcome.duration == .seconds(3))
        #expect(transport.sent.count == 1)
        #expect(outcome.bytesReceived < 1_000_000 && outcome.bytesReceived > 250_000)
    }

    @Test("with timing, a packet due after the deadline is not sent")
    func packetAfterDeadline() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock)
        let trace = Traces.tcp([(0, 10, 0), (50, 10, 0)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        #expect(transport.sent.count == 1)
        #expect(outcome.reachedDeadline)
        #expect(outcome.duration == .seconds(45))
    }

    @Test("an early close with fewer than 100 bytes missing is accepted")
    func earlyCloseTolerated() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(closeAt: (index: 0, afterBytes: 9_901)))
        let trace = Traces.tcp([(0, 10, 10_000)])
        let outcome = try await engine(clock).run(trace: trace, transport: transport)
        #expect(outcome.serverClosedEarly)
        #expect(outcome.bytesReceived == 9_901)
    }

    @Test("an early close with 100 or more bytes missing aborts the replay")
    func earlyCloseRejected() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(closeAt: (index: 1, afterBytes: 9_900)))
        let trace = Traces.tcp([(0, 10, 10), (0, 10, 10_000)])
        let error = await #expect(throws: WeheReplayError.self) {
            try await engine(clock).run(trace: trace, transport: transport)
        }
        #expect(error?.code == .responseIncomplete)
        #expect(error?.packetIndex == 1)
        #expect(transport.closeCount == 1)
    }

    @Test("a server that stops answering fails after the idle timeout")
    func serverStopsAnswering() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(stallAt: 2))
        let trace = Traces.tcp([(0, 10, 10), (0.1, 10, 10), (0.2, 10, 10)])
        let error = await #expect(throws: WeheReplayError.self) {
            try await engine(clock, idle: .seconds(5)).run(trace: trace, transport: transport)
        }
        #expect(error?.code == .serverStoppedAnswering)
        #expect(clock.now.offset > .seconds(5))
        #expect(transport.closeCount == 1)
    }

    @Test("a transport failure keeps its code and names the packet; the transport is closed")
    func sendFailure() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(failSendAt: 1))
        let trace = Traces.tcp([(0, 10, 0), (0.1, 10, 0)])
        let error = await #expect(throws: WeheReplayError.self) {
            try await engine(clock).run(trace: trace, transport: transport)
        }
        #expect(error?.code == .transportFailed)
        #expect(error?.packetIndex == 1)
        #expect(transport.closeCount == 1)
    }

    @Test("cancellation stops the replay with .cancelled and closes the transport")
    func cancellation() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock)
        let trace = Traces.tcp((0..<100).map { (Double($0), 10, 0) })
        let engine = self.engine(clock)
        let task = Task { () async throws(WeheReplayError) -> ReplayOutcome in
            try await engine.run(trace: trace, transport: transport)
        }
        task.cancel()
        let result = await task.result
        #expect(throws: WeheReplayError(.cancelled, "")) { try result.get() }
        #expect(transport.closeCount == 1)
        #expect(transport.sent.count < 100)
    }

    @Test("UDP: datagrams on schedule (zero-length keep-alives too), echoes counted, drain called")
    func udpReplay() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .milliseconds(20)))
        let trace = Traces.udp([(0, 1000), (0.05, 0), (0.1, 1000), (0.35, 500)])
        let outcome = try await engine(clock, deadline: .seconds(40)).run(trace: trace, transport: transport)
        #expect(transport.sent.map(\.at) == [.zero, .milliseconds(50), .milliseconds(100), .milliseconds(350)])
        #expect(transport.sent.map(\.bytes) == [1000, 0, 1000, 500])
        #expect(outcome.bytesReceived == 2500)
        #expect(transport.drainCount == 1)
        #expect(outcome.duration == .milliseconds(370))
        #expect(abs(bytesCarried(outcome.samples.mbps, interval: 0.1) - 2500) < 1e-9)
    }

    @Test("a trace without packets or with mixed packet kinds is refused")
    func invalidTraces() async throws {
        let clock = ManualClock()
        var mixed = Traces.tcp([(0, 10, 0)])
        mixed.packets.append(Traces.udp([(0.1, 10)]).packets[0])
        for trace in [Traces.tcp([]), mixed] {
            let error = await #expect(throws: WeheReplayError.self) {
                try await engine(clock).run(trace: trace, transport: InMemoryTransport(clock: clock))
            }
            #expect(error?.code == .invalidTrace)
        }
    }

    @Test("progress reports come once per completed interval with running totals")
    func progressReports() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(clock: clock, script: .init(latency: .zero, bytesPerSecond: 1_000_000))
        let reports = Mutex<[ReplayProgress]>([])
        let trace = Traces.tcp([(0, 10, 500_000)])
        _ = try await engine(clock).run(trace: trace, transport: transport) { progress in
            reports.withLock { $0.append(progress) }
        }
        let seen = reports.withLock { $0 }
        // Intervals 0-3 close as bytes of the next arrive; the last chunk lands exactly at 500 ms and closes 4.
        #expect(seen.count == 5)
        #expect(seen.map(\.bytesReceived) == seen.map(\.bytesReceived).sorted())
        #expect(seen.allSatisfy { $0.currentMbps > 7.5 && $0.expectedBytes == 500_000 && $0.totalPackets == 1 })
    }

    @Test("the published Youtube trace replays whole in virtual time")
    func publishedTrace() async throws {
        guard TestResources.hasSharedReplays else { return }
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let trace = try library.trace(file: "Youtube_02202024.pcap_client_all.json")
        let clock = ManualClock()
        let transport = InMemoryTransport(
            clock: clock, script: .init(latency: .milliseconds(2), bytesPerSecond: 50_000_000))
        let configuration = ReplayEngineConfiguration.standard(for: trace, appDuration: 39, sampleCount: 100)
        let outcome = try await ReplayEngine(configuration: configuration, clock: clock).run(
            trace: trace, transport: transport)
        #expect(outcome.bytesReceived == trace.bytesDown)
        #expect(outcome.packetsSent == trace.packets.count)
        #expect(!outcome.reachedDeadline)
        #expect(outcome.duration.inSeconds >= trace.duration)
        #expect(outcome.samples.count == Int((outcome.duration.inSeconds / 0.39).rounded(.down)) + 1)
    }
}

@Suite("replay configuration and measurements")
struct ReplayConfigurationTests {
    @Test("Δ = min(T_app, cap) / numSamples; timing off and 30 s for ports; 40 s for UDP; 45 s for TCP apps")
    func standardConfiguration() {
        let tcp = ReplayEngineConfiguration.standard(for: Traces.tcp([(0, 1, 0)]), appDuration: 39, sampleCount: 100)
        #expect(tcp.sampleInterval == .milliseconds(390))
        #expect(tcp.timing && tcp.deadline == .seconds(45))
        let long = ReplayEngineConfiguration.standard(for: Traces.tcp([(0, 1, 0)]), appDuration: 90, sampleCount: 100)
        #expect(long.sampleInterval == .milliseconds(450))
        let udp = ReplayEngineConfiguration.standard(for: Traces.udp([(0, 1)]), appDuration: 15, sampleCount: 100)
        #expect(udp.sampleInterval == .milliseconds(150) && udp.deadline == .seconds(40))
        let port = ReplayEngineConfiguration.standard(
            for: Traces.tcp([(0, 1, 0)], name: "port_853"), appDuration: 2, sampleCount: 100)
        #expect(!port.timing && port.deadline == .seconds(30) && port.sampleInterval == .milliseconds(20))
    }

    @Test("lateness: nearest-rank median and p99, negatives count as zero")
    func latenessSummary() {
        let values = (1...100).map { Duration.milliseconds($0) } + [.milliseconds(-5)]
        let summary = SendLateness(measurements: values)
        #expect(summary.count == 101)
        #expect(summary.median == .milliseconds(50))
        #expect(summary.p99 == .milliseconds(99))
        #expect(summary.maximum == .milliseconds(100))
        #expect(SendLateness(measurements: []).maximum == .zero)
    }

    @Test("the meter attributes bytes to [kΔ, (k+1)Δ) and extends the series to the end time")
    func meterBuckets() {
        let meter = ThroughputMeter(interval: .milliseconds(100), elapsed: { .zero })
        meter.add(1000, at: .milliseconds(99))
        meter.add(2000, at: .milliseconds(100))
        meter.add(500, at: .milliseconds(250))
        let series = meter.series(endingAt: .milliseconds(420))
        #expect(series.count == 5)
        for (value, expected) in zip(series.mbps, [0.08, 0.16, 0.04, 0, 0]) {
            #expect(abs(value - expected) < 1e-12)
        }
        #expect(meter.receivedBytes == 3500)
        #expect(meter.lastArrival == .milliseconds(250))
        // Bytes stamped earlier than the latest do not move the last arrival back.
        meter.add(10, at: .milliseconds(120))
        #expect(meter.lastArrival == .milliseconds(250))
        #expect(ThroughputMeter(interval: .milliseconds(100), elapsed: { .zero }).lastArrival == nil)
    }
}

/// The bytes a series of per-interval Mbit/s samples stands for.
private func bytesCarried(_ mbps: [Double], interval: Double) -> Double {
    let total: Double = mbps.reduce(0, +)
    return total * 125_000 * interval
}
