import NIOCore
import NIOPosix
import Synchronization
import WeheCore
import WeheReplay
import WeheWire

/// The UDP side of a replay (protocol.md section 7.1): one socket per recorded client port, created at that flow's
/// first datagram; every received datagram's bytes are counted; after the last datagram the transport waits until
/// the server's flows have reported `DONE` on the side channel (bounded by the deadline and `drainLimit`).
final class UDPReplayTransport: ReplayTransport {
    private let destinations: [CSPair: SocketAddress]
    private let tracker: UDPFlowTracker
    private let drainLimit: Duration
    private let sockets = Mutex<[UInt16: any Channel]>([:])
    private let meterBox = Mutex<ThroughputMeter?>(nil)
    /// Digests of the received datagrams, in arrival order (`DatagramReceipt`, for the server's loss timeline).
    let receipts = DatagramReceipts()

    init(destinations: [CSPair: SocketAddress], tracker: UDPFlowTracker, drainLimit: Duration) {
        self.destinations = destinations
        self.tracker = tracker
        self.drainLimit = drainLimit
    }

    func start(meter: ThroughputMeter) async throws {
        meterBox.withLock { $0 = meter }
    }

    func send(_ packet: ReplayPacket, index: Int) async throws {
        guard let destination = destinations[packet.csPair] else {
            throw WeheReplayError(.invalidTrace, "the port map has no destination for flow \(packet.csPair)")
        }
        let channel = try await socket(for: packet.csPair.clientPort, family: destination.protocol)
        let envelope = AddressedEnvelope(
            remoteAddress: destination, data: channel.allocator.buffer(bytes: packet.payload))
        do {
            try await channel.writeAndFlush(envelope).value(onCancel: { channel.close(promise: nil) })
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw WeheReplayError(
                .transportFailed, "sending a datagram failed: \(NetworkErrors.describe(error))",
                underlying: DescribedError(error))
        }
    }

    func receiveResponse(
        length: Int,
        for packet: ReplayPacket,
        index: Int,
        limits: ReplayReadLimits,
        meter: ThroughputMeter
    ) async throws -> ResponseRead {
        .complete
    }

    func drain(remaining: Duration) async throws {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: min(remaining, drainLimit))
        while clock.now < end, !tracker.isComplete {
            try await clock.sleep(for: .milliseconds(5))
        }
    }

    func close() async {
        let all = sockets.withLock { sockets in
            defer { sockets.removeAll() }
            return Array(sockets.values)
        }
        for channel in all { _ = try? await channel.close().get() }
    }

    private func socket(for clientPort: UInt16, family: NIOBSDSocket.ProtocolFamily) async throws -> any Channel {
        if let existing = sockets.withLock({ $0[clientPort] }) { return existing }
        guard let meter = meterBox.withLock({ $0 }) else {
            throw WeheReplayError(.transportFailed, "the transport was not started")
        }
        let bindHost = family == .inet6 ? "::" : "0.0.0.0"
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            DatagramCountingHandler(meter: meter, receipts: self.receipts))
                    }
                }
                .bind(host: bindHost, port: 0).get()
        } catch {
            throw WeheReplayError(
                .connectFailed, "cannot open a UDP socket: \(NetworkErrors.describe(error))",
                underlying: DescribedError(error))
        }
        sockets.withLock { $0[clientPort] = channel }
        return channel
    }
}

/// Counts the bytes of every received datagram and notes its digest.
final class DatagramCountingHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let meter: ThroughputMeter
    private let receipts: DatagramReceipts?

    init(meter: ThroughputMeter, receipts: DatagramReceipts? = nil) {
        self.meter = meter
        self.receipts = receipts
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data).data
        meter.add(buffer.readableBytes)
        if let receipts {
            receipts.append(buffer.withUnsafeReadableBytes { DatagramReceipt.digest($0) })
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP port unreachable and similar: the replay goes on, as the published clients ignore them.
    }
}

/// What the server reported about its UDP flows on the side channel (`STARTED;<port>` / `DONE;<port>`).
final class UDPFlowTracker: Sendable {
    private let state = Mutex<(expected: Int, started: Set<UInt16>, done: Set<UInt16>)>((0, [], []))

    /// Sets how many flows the server announced (the sender count).
    func expect(_ count: Int) {
        state.withLock { $0.expected = count }
    }

    /// Records a notification.
    func record(_ notification: SideChannelMessage.Notification) {
        state.withLock { state in
            switch notification {
            case .started(let port): state.started.insert(port)
            case .done(let port):
                state.started.insert(port)
                state.done.insert(port)
            }
        }
    }

    /// Whether every announced flow has started and every started flow is done.
    var isComplete: Bool {
        state.withLock { state in
            state.started.count >= state.expected && state.done.isSuperset(of: state.started)
        }
    }

    /// Flows the server reported as started.
    var startedCount: Int { state.withLock { $0.started.count } }
}

/// The digests of the datagrams one replay received, in arrival order (bounded by `DatagramReceipt.maximumDatagrams`).
final class DatagramReceipts: Sendable {
    private let digests = Mutex<[UInt32]>([])

    func append(_ digest: UInt32) {
        digests.withLock { if $0.count < DatagramReceipt.maximumDatagrams { $0.append(digest) } }
    }

    var all: [UInt32] { digests.withLock { $0 } }
}
