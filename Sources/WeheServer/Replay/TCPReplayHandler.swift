import Logging
import NIOCore
import WeheCore
import WeheStore

/// Serves one connection on a TCP replay port (protocol.md 6.2): a `WHATSMYIPMAN` query, or the replay of the
/// session admitted for the peer's address — read each request group, send its response burst (recorded bytes and
/// pacing when the server trace has them, filler bytes of the recorded length otherwise), then close.
struct TCPReplayHandler {
    let context: ServerContext
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    /// Called once the connection is matched to an admitted session: from then on it keeps its slot of the replay
    /// share (before, it may be evicted for a newer connection when the share is full).
    var claimed: @Sendable () -> Void = {}

    /// Runs the connection; never throws.
    func run() async {
        let nioChannel = channel.channel
        let peer = AddressText.normalized(nioChannel.remoteAddress?.ipAddress ?? "unknown")
        let local = AddressText.normalized(nioChannel.localAddress?.ipAddress ?? "")
        var logger = context.logger
        logger[metadataKey: "wehe.peer"] = "\(AddressText.redacted(peer))"
        logger[metadataKey: "wehe.channel"] = "tcp-replay"
        logger[metadataKey: "wehe.port"] = "\(nioChannel.localAddress?.port ?? 0)"
        let limits = context.configuration.limits
        let firstDeadline = nioChannel.eventLoop.scheduleTask(in: .init(limits.firstMessageTimeout)) {
            nioChannel.close(promise: nil)
        }
        let lifetime = nioChannel.eventLoop.scheduleTask(in: .init(limits.replayMaximumDuration)) {
            nioChannel.close(promise: nil)
        }
        defer {
            firstDeadline.cancel()
            lifetime.cancel()
        }
        var sampler: TCPInfoSampler?
        var session: Session?
        var prober: MergePointProber?
        do {
            try await channel.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                guard var first = try await iterator.next() else { return }
                while WhatsMyIP.classify(first.readableBytesView) == .undecided {
                    guard var more = try await iterator.next() else { return }
                    first.writeBuffer(&more)
                }
                let arrival = ContinuousClock.now
                firstDeadline.cancel()
                if WhatsMyIP.classify(first.readableBytesView) == .query {
                    let answer = WhatsMyIP.answerAddress(peer: peer, local: local)
                    try await outbound.write(WhatsMyIP.response(address: answer))
                    logger.debug("WHATSMYIPMAN answered")
                    return
                }
                guard let claimed = await context.registry.claimTCP(peerAddress: peer) else {
                    try? await outbound.write(ByteBuffer(string: "SuspiciousClientIP!;\(peer)"))
                    throw ReplayServerError(.unknownClient, "replay connection from an address without a session")
                }
                session = claimed
                claimed.recordTraffic(clientBytes: first.readableBytes, active: true, at: arrival)
                self.claimed()
                // The loss timeline starts when the replay does, with the client's first message: both servers of a
                // WeHeY pair time their replay from its own start. Not before the claim: a connection nobody
                // claimed costs the server nothing but its descriptor (700 idle ones sampled every 10 ms kept the
                // event loops too busy to accept a real client's side channel).
                sampler = context.configuration.lossSamplingPeriod.map {
                    TCPInfoSampler(channel: nioChannel, period: $0)
                }
                if let port = nioChannel.remoteAddress?.port {
                    context.captures?.claim(id: claimed.id, clientPort: port)
                }
                if context.configuration.pcapDirectory != nil,
                    let tag = try? await nioChannel.pipeline.handler(type: PacketCaptureTag.self).get()
                {
                    let declaration = claimed.declaration
                    tag.capture.claim(
                        PacketCapture.relativePath(
                            userID: declaration.userID, replayName: declaration.replayName,
                            extraString: declaration.extraString, historyCount: declaration.historyCount,
                            testID: declaration.testID, day: ArchiveWriter.dayPath(context.configuration.now())))
                }
                logger[metadataKey: "wehe.test"] = "\(claimed.key)"
                logger[metadataKey: "wehe.replay.name"] = "\(claimed.replay.name)"
                // WeHeY's blind spot (opt-in): probe the original replays, among them a localization's simultaneous
                // ones, towards this connection's client only.
                if let settings = context.configuration.mergePointProbe, claimed.declaration.testID == 0 {
                    let (started, note) = MergePointProber.start(
                        server: local, serverPort: nioChannel.localAddress?.port ?? 0, client: peer,
                        clientPort: nioChannel.remoteAddress?.port ?? 0, settings: settings)
                    prober = started
                    if let note { logger.notice("merge-point probe not started", metadata: ["wehe.reason": "\(note)"]) }
                }
                let timing = try await replay(
                    claimed, first: first.readableBytes, arrival: arrival, iterator: &iterator, outbound: outbound)
                report(timing, session: claimed, logger: logger)
                // The last response may still sit in the outbound buffers (a throttled path drains them slowly):
                // closing now would throw it away. Wait for the client's end of stream (it closes once it has read
                // everything); the lifetime timer bounds the wait.
                while try await iterator.next() != nil {}
                // Every byte of the replay is counted: a DONE waiting for late traffic need not wait any longer.
                claimed.markTCPFinished()
                if let sampler { await saveLoss(sampler, session: claimed, logger: logger) }
                if let running = prober {
                    let record = await running.finish()
                    context.mergePointProbes.save(record, for: claimed.key)
                    logger.info(
                        "merge-point probes",
                        metadata: [
                            "wehe.probes": "\(record.flowToMergePoint.count)/\(record.baselineToMergePoint.count)",
                            "wehe.note": "\(record.note ?? "")",
                        ])
                }
                // The lateness record compares arrivals with the trace's schedule, which only timed replays follow
                // (a port test sends everything at once: it would read as seconds of "lateness").
                guard claimed.replay.timed else { return }
                await context.events.record(
                    .init(rawValue: "replay-timing"),
                    declaration: WeheWireDeclaration(
                        userID: claimed.declaration.userID, historyCount: claimed.declaration.historyCount,
                        testID: claimed.declaration.testID, replayName: claimed.replay.name),
                    clientAddress: peer,
                    detail: timing.detail
                )
            }
        } catch {
            let reason = (error as? ReplayServerError)?.message ?? "\(error)"
            let code = (error as? ReplayServerError)?.code.description ?? "io"
            context.metrics.connectionFailed("tcp-replay", reason: code)
            logger.notice(
                "replay connection closed",
                metadata: ["wehe.reason": "\(reason)", "wehe.code": "\(code)", "wehe.session": "\(session?.id ?? 0)"]
            )
        }
        session?.markTCPFinished()
        prober?.stop()
    }

    private func replay(
        _ session: Session,
        first: Int,
        arrival: ContinuousClock.Instant,
        iterator: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async throws -> ReplayTiming {
        let replay = session.replay
        guard let flow = replay.server.tcpFlows.first else { return ReplayTiming() }
        // Provisional origin: the first payload on its recorded time; the record is re-anchored at the end.
        let origin = arrival - .seconds(replay.firstPacketTime)
        var received = first
        var needed = 0
        var timing = ReplayTiming()
        for group in flow.groups {
            needed += group.requestLength
            while received < needed {
                guard let chunk = try await iterator.next() else {
                    throw ReplayServerError(
                        .connectionClosed,
                        "client closed after \(received) of \(needed) request bytes (group \(timing.groups.count + 1))"
                    )
                }
                received += chunk.readableBytes
                session.recordTraffic(clientBytes: chunk.readableBytes, active: false)
            }
            let complete = ContinuousClock.now
            let scheduled = origin + .seconds(group.requestTime)
            var record = ReplayTiming.Group(requestLateness: Self.seconds(scheduled.duration(to: complete)))
            if group.responseLength > 0 {
                let start = ContinuousClock.now
                record.reaction = Self.seconds(complete.duration(to: start))
                record.responseLateness = Self.seconds(scheduled.duration(to: start))
                try await sendBurst(group, timed: replay.timed, session: session, outbound: outbound)
            }
            timing.groups.append(record)
        }
        timing.alignToEarliestGroup()
        return timing
    }

    private func sendBurst(
        _ group: ResponseGroup,
        timed: Bool,
        session: Session,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async throws {
        // Bytes count when handed over (before the write: the client may read them and send DONE before this task
        // resumes); the activity when the write returns (the client drained enough to make room).
        if let segments = group.segments {
            let start = ContinuousClock.now
            for segment in segments {
                if timed, segment.offset > 0 {
                    try await Task.sleep(until: start + .seconds(segment.offset), clock: .continuous)
                }
                session.recordTraffic(serverBytes: segment.payload.count, active: false)
                try await outbound.write(ByteBuffer(bytes: segment.payload))
                session.recordTraffic(active: true)
            }
        } else {
            var remaining = group.responseLength
            var batch: [ByteBuffer] = []
            while remaining > 0 {
                let size = min(remaining, context.filler.readableBytes)
                batch.append(
                    context.filler.getSlice(at: context.filler.readerIndex, length: size)
                        ?? ByteBuffer(repeating: 0, count: size))
                remaining -= size
                if batch.count == 8 || remaining == 0 {
                    session.recordTraffic(serverBytes: batch.reduce(0) { $0 + $1.readableBytes }, active: false)
                    try await outbound.write(contentsOf: batch)
                    session.recordTraffic(active: true)
                    batch.removeAll(keepingCapacity: true)
                }
            }
        }
        context.metrics.bytesSent(group.responseLength, transport: "tcp")
    }

    /// Stores the replay's loss timeline (a failure is logged: the replay itself succeeded).
    private func saveLoss(_ sampler: TCPInfoSampler, session: Session, logger: Logger) async {
        let readings = await sampler.finish()
        guard
            let record = TCPInfoSampler.record(
                key: session.key, readings: readings, recordedAt: context.configuration.now())
        else {
            logger.debug("no loss timeline", metadata: ["wehe.unavailable": "\(sampler.isUnavailable)"])
            return
        }
        do {
            try await context.configuration.store.save(loss: record)
        } catch {
            logger.warning("loss timeline not stored", metadata: ["wehe.error": "\(error)"])
        }
    }

    private func report(_ timing: ReplayTiming, session: Session, logger: Logger) {
        let metrics = context.metrics
        for group in timing.groups {
            if session.replay.timed { metrics.requestLateness(seconds: group.requestLateness) }
            if let reaction = group.reaction { metrics.responseDelay(seconds: reaction) }
        }
        logger.info(
            "replay timing", metadata: ["wehe.timing": "\(timing.detail)", "wehe.timed": "\(session.replay.timed)"])
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
