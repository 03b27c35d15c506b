import Logging
import NIOCore
import Synchronization
import WeheCore
import WeheWire

/// One UDP replay port (protocol.md 7.2): the first datagram from a new client address and port that opens a flow of
/// a waiting UDP session of that address starts the server's stream to that address and port (recorded server
/// datagrams, or the client's recorded datagrams of the flow with their timing), framed by `STARTED;<port>` /
/// `DONE;<port>` on the side channel. Which session a datagram opens is decided by `claim`: by its
/// content, not by the address alone, so that the late end of an earlier replay cannot take the next one (unlike the
/// reference server, which checks no content). Datagrams from unknown senders, datagrams that open no waiting session
/// and later datagrams of a running flow are ignored.
struct UDPReplayListener {
    let context: ServerContext
    let channel: NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>
    /// The recorded port this listener stands for.
    let recordedPort: Int

    func run() async throws {
        var logger = context.logger
        logger[metadataKey: "wehe.channel"] = "udp-replay"
        logger[metadataKey: "wehe.port"] = "\(channel.channel.localAddress?.port ?? 0)"
        let streamLogger = logger
        let active = ActiveFlows()
        // Sources (`address|port`) that started a flow on this port, and when: see `claim`.
        var carried: [String: ContinuousClock.Instant] = [:]
        try await channel.executeThenClose { inbound, outbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await envelope in inbound {
                    let address = envelope.remoteAddress
                    let ip = AddressText.normalized(address.ipAddress ?? "unknown")
                    let source = "\(ip)|\(address.port ?? 0)"
                    if let running = active.session(for: source) {
                        running.recordTraffic(clientBytes: envelope.data.readableBytes, active: true)
                        continue
                    }
                    let payload = Array(envelope.data.readableBytesView)
                    guard let (session, index) = await claim(payload, from: ip, source: source, carried: &carried)
                    else {
                        streamLogger.debug(
                            "UDP datagram ignored: no waiting session it opens",
                            metadata: ["wehe.peer": "\(AddressText.redacted(ip))"])
                        continue
                    }
                    let opened = session.replay.udpFlow(opening: payload, serverPort: recordedPort)
                    session.recordTraffic(clientBytes: payload.count, active: true)
                    active.insert(source, session)
                    // The source stays the session's until the session ends, not until the server's stream does:
                    // the client may send for longer than the server streams, and a loaded listener reads datagrams
                    // late. Either way the client's datagrams are the replay's and count for it.
                    group.addTask {
                        await stream(
                            session, flowIndex: index, opened: opened, to: address, outbound: outbound,
                            logger: streamLogger)
                    }
                }
            }
        }
    }

    /// How long a source that started a flow is remembered.
    static let carriedMemory: Duration = .seconds(600)

    /// The waiting session of `ip` a datagram from a new source starts, with the index of the flow.
    ///
    /// The address alone is not enough: a shaper's upload queue can release the last datagrams of an address's
    /// previous replay after its next session was admitted, and that session must not be streamed to the old,
    /// closed port. A datagram therefore starts a session's flow when its payload is one of the flow's first client
    /// datagrams (`LoadedReplay.udpFlow(opening:serverPort:)`: the declared trace, original or control). A datagram
    /// of other content (a client that alters payloads, or whose first datagrams were lost) starts one only from a
    /// source that has not already started a flow on this port in the last `carriedMemory` — never from the port
    /// of an earlier replay.
    private func claim(
        _ payload: [UInt8], from ip: String, source: String, carried: inout [String: ContinuousClock.Instant]
    ) async -> (Session, Int)? {
        let port = recordedPort
        var found = await context.registry.claimUDP(peerAddress: ip, source: source) { session in
            session.replay.udpFlow(opening: payload, serverPort: port) != nil
        }
        let now = ContinuousClock.now
        if found == nil, carried[source].map({ $0.duration(to: now) >= Self.carriedMemory }) ?? true {
            found = await context.registry.claimUDP(peerAddress: ip, source: source) { session in
                session.replay.hasUDPFlow(serverPort: port)
            }
        }
        if found != nil {
            carried = carried.filter { $0.value.duration(to: now) < Self.carriedMemory }
            carried[source] = now
        }
        return found
    }

    private func stream(
        _ session: Session,
        flowIndex: Int,
        opened: UDPServerFlow?,
        to address: SocketAddress,
        outbound: NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>,
        logger: Logger
    ) async {
        let candidates = session.replay.server.udpFlows.filter { Int($0.csPair.serverPort) == recordedPort }
        guard !candidates.isEmpty else { return }
        // The flow the first datagram opens; otherwise this port's flows in start order.
        let flow = opened ?? candidates[min(flowIndex, candidates.count - 1)]
        let schedule = session.replay.udpSchedule(for: flow)
        let clientPort = UInt16(clamping: address.port ?? 0)
        let limit = context.configuration.limits.udpStreamDuration
        await session.notifier.notify(.started(clientPort: clientPort))
        let start = ContinuousClock.now
        var sent = 0
        var bytes = 0
        // What went out when, for the client's report of what arrived (the UDP loss timeline of WeHeY).
        var log = UDPSendLogs.Log(
            key: session.key, clientAddress: session.peerAddress, sentAt: [], sizes: [], digests: [])
        do {
            for datagram in schedule {
                let due = start + .seconds(datagram.offset)
                if start.duration(to: due) > limit { break }
                if due > .now { try await Task.sleep(until: due, clock: .continuous) }
                // A client that ended its replay early (its time limit, an adaptive verdict's short round) and closed
                // its side channel gets no more of the stream: nobody reads it, and the next replay shares the path.
                if session.ended { break }
                let sentAt = start.duration(to: .now)
                try await outbound.write(
                    AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: datagram.payload)))
                sent += 1
                bytes += datagram.payload.count
                session.recordTraffic(serverBytes: datagram.payload.count, active: false)
                log.sentAt.append(TCPInfoSampler.seconds(sentAt))
                log.sizes.append(datagram.payload.count)
                log.digests.append(DatagramReceipt.digest(datagram.payload))
            }
        } catch {
            logger.notice("UDP stream cut", metadata: ["wehe.test": "\(session.key)", "wehe.error": "\(error)"])
        }
        context.metrics.bytesSent(bytes, transport: "udp")
        if context.configuration.lossSamplingPeriod != nil, !log.sentAt.isEmpty {
            log.minimumRTT = await session.notifier.minimumRTT()
            log.finished = .now
            context.udpSendLogs.put(log)
        }
        await session.notifier.notify(.done(clientPort: clientPort))
        logger.info(
            "UDP stream done",
            metadata: ["wehe.test": "\(session.key)", "wehe.datagrams": "\(sent)", "wehe.bytes": "\(bytes)"]
        )
    }
}

/// The client sources (address and port) that started a flow on one listener, with their sessions, until the
/// session ends: a flow's later datagrams count as the client's replay traffic. An ended session's sources are
/// forgotten on the next lookup or start, so the map holds at most the running sessions' flows and those that ended
/// since the last datagram.
private final class ActiveFlows: Sendable {
    private let sources = Mutex([String: Session]())

    func session(for source: String) -> Session? {
        sources.withLock { sources in
            guard let session = sources[source] else { return nil }
            guard !session.ended else {
                sources[source] = nil
                return nil
            }
            return session
        }
    }

    func insert(_ source: String, _ session: Session) {
        sources.withLock { sources in
            sources = sources.filter { !$0.value.ended }
            sources[source] = session
        }
    }
}
