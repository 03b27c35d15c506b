import Logging
import NIOCore
import Synchronization
import WeheCore
import WeheWire

/// One UDP replay port (protocol.md 7.2): the first datagram from a new client address and port whose address holds
/// a UDP session starts the server's stream to that address (recorded server datagrams, or the client's recorded
/// datagrams of the flow with their timing), framed by `STARTED;<port>` / `DONE;<port>` on the side channel.
/// Datagrams from unknown senders and later datagrams of a running flow are ignored (content is never checked).
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
        try await channel.executeThenClose { inbound, outbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await envelope in inbound {
                    let address = envelope.remoteAddress
                    let ip = AddressText.normalized(address.ipAddress ?? "unknown")
                    let source = "\(ip)|\(address.port ?? 0)"
                    if active.contains(source) { continue }
                    guard let (session, index) = await context.registry.claimUDP(peerAddress: ip, source: source)
                    else {
                        streamLogger.debug(
                            "UDP datagram ignored: no waiting session",
                            metadata: ["wehe.peer": "\(AddressText.redacted(ip))"])
                        continue
                    }
                    active.insert(source)
                    group.addTask {
                        await stream(session, flowIndex: index, to: address, outbound: outbound, logger: streamLogger)
                        active.remove(source)
                    }
                }
            }
        }
    }

    private func stream(
        _ session: Session,
        flowIndex: Int,
        to address: SocketAddress,
        outbound: NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>,
        logger: Logger
    ) async {
        let flows = session.replay.server.udpFlows
        let matching = flows.filter { Int($0.csPair.serverPort) == recordedPort }
        let candidates = matching.isEmpty ? flows : matching
        guard !candidates.isEmpty else { return }
        let flow = candidates[min(flowIndex, candidates.count - 1)]
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
                let sentAt = start.duration(to: .now)
                try await outbound.write(
                    AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: datagram.payload)))
                sent += 1
                bytes += datagram.payload.count
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

/// The client addresses whose UDP stream is running on one listener.
private final class ActiveFlows: Sendable {
    private let sources = Mutex(Set<String>())

    func contains(_ source: String) -> Bool { sources.withLock { $0.contains(source) } }
    func insert(_ source: String) { sources.withLock { _ = $0.insert(source) } }
    func remove(_ source: String) { sources.withLock { _ = $0.remove(source) } }
}
