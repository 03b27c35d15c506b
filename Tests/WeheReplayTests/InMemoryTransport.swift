import Synchronization
import WeheCore
import WeheReplay

/// A scripted transport on a `ManualClock`: sends take `sendCost`; a TCP response starts `latency` after the
/// request and arrives in 4096-byte chunks at `bytesPerSecond`; a UDP datagram is echoed `latency` later.
final class InMemoryTransport: ReplayTransport, Sendable {
    struct Script: Sendable {
        var sendCost: Duration = .zero
        var latency: Duration = .milliseconds(10)
        var bytesPerSecond: Double = 10_000_000
        /// Close the connection after this many bytes of the response to packet `index`.
        var closeAt: (index: Int, afterBytes: Int)?
        /// Stop answering forever at the response to packet `index`.
        var stallAt: Int?
        /// Fail the send of packet `index`.
        var failSendAt: Int?
        /// Extra time every send of packet `index` takes.
        var slowSend: (index: Int, cost: Duration)?
    }

    struct Sent: Sendable, Hashable {
        var index: Int
        var at: Duration
        var bytes: Int
    }

    private let clock: ManualClock
    private let script: Script
    private let state = Mutex<(sent: [Sent], started: Duration?, closed: Int, drained: Int)>(([], nil, 0, 0))
    private let meterBox = Mutex<ThroughputMeter?>(nil)

    init(clock: ManualClock, script: Script = Script()) {
        self.clock = clock
        self.script = script
    }

    var sent: [Sent] { state.withLock { $0.sent } }
    var closeCount: Int { state.withLock { $0.closed } }
    var drainCount: Int { state.withLock { $0.drained } }

    private var elapsed: Duration {
        let start = state.withLock { $0.started } ?? .zero
        return clock.now.offset - start
    }

    func start(meter: ThroughputMeter) async throws {
        state.withLock { $0.started = clock.now.offset }
        meterBox.withLock { $0 = meter }
    }

    func send(_ packet: ReplayPacket, index: Int) async throws {
        if script.failSendAt == index {
            throw WeheReplayError(.transportFailed, "scripted send failure")
        }
        let at = elapsed
        state.withLock { $0.sent.append(Sent(index: index, at: at, bytes: packet.payload.count)) }
        clock.advance(by: script.sendCost)
        if let slow = script.slowSend, slow.index == index { clock.advance(by: slow.cost) }
        if !packet.isTCP, let meter = meterBox.withLock({ $0 }) {
            meter.add(packet.payload.count, at: at + script.latency)
        }
    }

    func receiveResponse(
        length: Int,
        for packet: ReplayPacket,
        index: Int,
        limits: ReplayReadLimits,
        meter: ThroughputMeter
    ) async throws -> ResponseRead {
        let startTime = clock.now
        let deadline = startTime.advanced(by: limits.remaining)
        if script.stallAt == index {
            if limits.idleTimeout < limits.remaining {
                clock.advance(by: limits.idleTimeout)
                throw WeheReplayError(.serverStoppedAnswering, "no data for the idle timeout")
            }
            clock.advance(to: deadline)
            return .deadlineReached(received: 0)
        }
        var received = 0
        var arrival = startTime.advanced(by: script.latency)
        let limit = script.closeAt.flatMap { $0.index == index ? $0.afterBytes : nil } ?? length
        while received < min(length, limit) {
            let chunk = min(4096, min(length, limit) - received)
            arrival = arrival.advanced(by: .nanoseconds(Int64((Double(chunk) / script.bytesPerSecond * 1e9).rounded())))
            if arrival > deadline {
                clock.advance(to: deadline)
                return .deadlineReached(received: received)
            }
            clock.advance(to: arrival)
            meter.add(chunk)
            received += chunk
        }
        return received == length ? .complete : .closed(received: received)
    }

    func drain(remaining: Duration) async throws {
        state.withLock { $0.drained += 1 }
        clock.advance(by: min(script.latency, remaining))
    }

    func close() async {
        state.withLock { $0.closed += 1 }
    }
}
