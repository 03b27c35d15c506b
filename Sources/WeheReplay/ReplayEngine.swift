public import Logging
public import WeheCore

/// Replays one client trace over a `ReplayTransport` (protocol.md sections 6.1 and 7.1).
///
/// Packets are sent in trace order. With timing on, each waits until `start + timestamp` on the injected clock;
/// late packets go at once. After a TCP packet with a response, the engine reads exactly `response_len` bytes
/// before the next packet (every published trace has one flow, so packets are handled strictly in order). No packet
/// starts after the deadline and a read in progress is cut there; that ends the replay normally with
/// `reachedDeadline`. Received bytes are counted into the sample intervals by a `ThroughputMeter` on the same clock.
///
/// Every send's lateness is measured twice: against its recorded time, and against the moment it could have been
/// sent at the earliest (see `ReplayOutcome`).
public struct ReplayEngine<C: Clock>: Sendable where C.Duration == Duration {
    /// How to replay.
    public let configuration: ReplayEngineConfiguration
    /// The clock every wait and measurement uses.
    public let clock: C
    /// Where the engine logs.
    public let logger: Logger

    /// Creates an engine.
    public init(configuration: ReplayEngineConfiguration, clock: C, logger: Logger = Logger(label: "wehe.replay")) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    /// Replays `trace` and returns what was measured. The transport is closed before this returns.
    /// - Parameters:
    ///   - trace: the trace (must have packets, all of the trace's transport).
    ///   - transport: the connections to use.
    ///   - onProgress: called about once per sample interval.
    /// - Throws: `WeheReplayError`.
    public func run(
        trace: ReplayTrace,
        transport: some ReplayTransport,
        onProgress: (@Sendable (ReplayProgress) -> Void)? = nil
    ) async throws(WeheReplayError) -> ReplayOutcome {
        guard !trace.packets.isEmpty else {
            throw WeheReplayError(.invalidTrace, "the trace '\(trace.name)' has no packets")
        }
        let isUDP = trace.transport == .udp
        if let index = trace.packets.firstIndex(where: { $0.isTCP == isUDP }) {
            throw WeheReplayError(.invalidTrace, "packet kinds do not match the trace's transport", packetIndex: index)
        }
        let clock = self.clock
        let start = clock.now
        let meter = ThroughputMeter(
            interval: configuration.sampleInterval,
            totalPackets: trace.packets.count,
            expectedBytes: trace.bytesDown,
            elapsed: { start.duration(to: clock.now) },
            onProgress: onProgress
        )
        do {
            let outcome = try await replay(trace, transport: transport, meter: meter, start: start)
            await transport.close()
            return outcome
        } catch {
            await transport.close()
            throw Self.replayError(error)
        }
    }

    private func replay(
        _ trace: ReplayTrace,
        transport: some ReplayTransport,
        meter: ThroughputMeter,
        start: C.Instant
    ) async throws -> ReplayOutcome {
        let deadline = start.advanced(by: configuration.deadline)
        try await transport.start(meter: meter)
        var scheduleLateness: [Duration] = []
        var engineLateness: [Duration] = []
        scheduleLateness.reserveCapacity(configuration.timing ? trace.packets.count : 0)
        engineLateness.reserveCapacity(trace.packets.count)
        var reachedDeadline = false
        var closedEarly = false
        var sent = 0
        packets: for (index, packet) in trace.packets.enumerated() {
            try Task.checkCancellation()
            let ready = clock.now
            if ready >= deadline {
                reachedDeadline = true
                break
            }
            var target = ready
            if configuration.timing {
                let scheduled = start.advanced(by: .seconds(packet.timestamp))
                if scheduled > ready {
                    try await wait(until: min(scheduled, deadline))
                    target = scheduled
                    if scheduled >= deadline {
                        reachedDeadline = true
                        break
                    }
                }
                let now = clock.now
                scheduleLateness.append(scheduled.duration(to: now))
                engineLateness.append(target.duration(to: now))
            } else {
                engineLateness.append(target.duration(to: clock.now))
            }
            do {
                try await transport.send(packet, index: index)
            } catch let error as WeheReplayError {
                var located = error
                located.packetIndex = located.packetIndex ?? index
                throw located
            }
            sent += 1
            meter.recordSent(packet.payload.count)
            let length = packet.responseLength
            guard length > 0 else { continue }
            let limits = ReplayReadLimits(
                remaining: clock.now.duration(to: deadline), idleTimeout: configuration.idleTimeout)
            let read = try await transport.receiveResponse(
                length: length, for: packet, index: index, limits: limits, meter: meter)
            switch read {
            case .complete:
                continue
            case .closed(let received):
                let missing = length - received
                guard missing < configuration.missingBytesTolerance else {
                    throw WeheReplayError(
                        .responseIncomplete,
                        "the server closed the connection with \(missing) of \(length) response bytes missing",
                        packetIndex: index)
                }
                closedEarly = true
                logger.debug(
                    "server closed early within tolerance",
                    metadata: ["wehe.replay.packet": "\(index)", "wehe.replay.missing": "\(missing)"])
                break packets
            case .deadlineReached:
                reachedDeadline = true
                break packets
            }
        }
        if !reachedDeadline {
            let remaining = clock.now.duration(to: deadline)
            if remaining > .zero { try await transport.drain(remaining: remaining) }
        }
        let end = clock.now
        let duration = start.duration(to: end)
        logger.debug(
            "replay finished",
            metadata: [
                "wehe.replay.name": "\(trace.name)", "wehe.replay.seconds": "\(duration.inSeconds)",
                "wehe.replay.bytesReceived": "\(meter.receivedBytes)",
            ])
        let measured = meter.measured(endingAt: duration)
        return ReplayOutcome(
            samples: measured.samples,
            sampleInterval: meter.interval,
            duration: duration,
            bytesSent: meter.sentBytes,
            bytesReceived: meter.receivedBytes,
            packetsSent: sent,
            reachedDeadline: reachedDeadline,
            serverClosedEarly: closedEarly,
            scheduleLateness: SendLateness(measurements: scheduleLateness),
            engineLateness: SendLateness(measurements: engineLateness),
            lastArrival: measured.lastArrival
        )
    }

    /// Sleeps until `instant`; with a spin window, sleeps until shortly before and yields until the exact time.
    private func wait(until instant: C.Instant) async throws {
        let window = configuration.spinWindow
        if window > .zero {
            let early = instant.advanced(by: .zero - window)
            if clock.now < early { try await clock.sleep(until: early, tolerance: nil) }
            while clock.now < instant {
                try Task.checkCancellation()
                await Task.yield()
            }
        } else {
            try await clock.sleep(until: instant, tolerance: nil)
        }
    }

    static func replayError(_ error: any Error) -> WeheReplayError {
        switch error {
        case let error as WeheReplayError:
            return error
        case is CancellationError:
            return WeheReplayError(.cancelled, "the replay was cancelled")
        default:
            return WeheReplayError(.transportFailed, "the replay failed: \(error)", underlying: SendableError(error))
        }
    }
}

/// Keeps a description of a non-`Sendable` error.
struct SendableError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = String(describing: error) }
}
