import Logging
import NIOCore
import NIOPosix
import Synchronization

// The server's listening sockets: binding the TCP and UDP listeners, the accept stream's types, and the log of
// failed accepts.
extension ReplayServer {
    /// Closes bound listeners that will not be served (startup failed) through their async wrappers.
    static func closeUnused(_ accepts: [TCPListener], _ datagrams: [DatagramChannel]) async {
        for listener in accepts { try? await listener.accepts.executeThenClose { _ in } }
        for channel in datagrams { try? await channel.executeThenClose { _, _ in } }
    }

    /// A listening socket's stream of accepted connections. They come out as plain channels, set up and reading into
    /// an `EarlyReadBuffer`, and are wrapped for async use only once an accept loop has taken them: a connection
    /// still queued in the stream when the server stops owns no async writer, whose release unfinished would be a
    /// fatal error in NIO ("Deinited NIOAsyncWriter without calling finish()").
    typealias AcceptChannel = NIOAsyncChannel<any Channel, Never>

    /// A bound TCP listener: its accept stream, the connections set up but not yet taken from it, and its log of
    /// connections whose setup failed.
    struct TCPListener: Sendable {
        let accepts: AcceptChannel
        let queued: QueuedConnections
        let failures: ConnectionSetupFailureLog
        /// The listening socket.
        var channel: any Channel { accepts.channel }
    }
    typealias DatagramChannel = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    func listeningPort(_ recorded: Int) -> Int {
        switch configuration.replayPorts {
        case .ephemeral: 0
        case .recorded(let offset): ReplayCatalogue.movedPort(recorded, offset: offset)
        }
    }

    func bindTCP(
        port: Int,
        group: MultiThreadedEventLoopGroup,
        kind: String,
        setup: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> TCPListener {
        let logger = configuration.logger
        let failures = ConnectionSetupFailureLog(
            kind: kind, logger: logger, metrics: ServerMetrics(registry: configuration.metricsRegistry))
        let faults = setupFaults
        let queued = QueuedConnections()
        let listener: AcceptChannel
        do {
            listener = try await ServerBootstrap(group: group)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptFailureLogger(kind: kind, logger: logger))
                    }
                }
                .serverChannelOption(.backlog, value: 4096)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(
                    .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 65536)
                )
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 * 1024, high: 256 * 1024))
                // Run by NIO's accept handler with the child options above; nothing of ours to do there but the
                // test seam. Its failures (and the options') reach the absorber added below.
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try faults.check(.accepted) }
                }
                .bind(host: configuration.bindAddress, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        do {
                            try faults.check(.pipeline)
                            // Set here, not as a child channel option: a socket option the system refuses for one
                            // connection (seen: EACCES for an unprivileged server in a sandbox) must not fail its
                            // setup. Without it the connection still works.
                            _ = try? channel.syncOptions?.setOption(.socketOption(.tcp_nodelay), value: 1)
                            try setup(channel)
                            try channel.pipeline.syncOperations.addHandler(EarlyReadBuffer())
                            queued.add(channel)
                            return channel
                        } catch {
                            // NIO drops a connection whose initializer failed without closing its socket (never
                            // registered, it would stay open): close it here; the listener goes on.
                            channel.close(promise: nil)
                            failures.record(error, stage: .pipeline)
                            throw error
                        }
                    }
                }
        } catch {
            throw ReplayServerError(
                .bindFailed, "cannot listen on \(configuration.bindAddress):\(port) (\(kind))", underlying: error)
        }
        // A per-connection error that NIO's accept handler reports down the listening socket's pipeline would end
        // the accept stream (the whole listener, for good): it stops right after the accept handler. (Added once the
        // socket is bound, before its port is announced.)
        do {
            try await listener.channel.eventLoop.submit {
                let pipeline = listener.channel.pipeline.syncOperations
                try pipeline.addHandler(
                    ConnectionSetupErrorAbsorber(failures: failures),
                    position: .after(try pipeline.context(name: "AcceptHandler").handler))
            }.get()
        } catch {
            await Self.closeUnused([TCPListener(accepts: listener, queued: queued, failures: failures)], [])
            throw ReplayServerError(
                .bindFailed, "cannot set up the listener on \(configuration.bindAddress):\(port) (\(kind))",
                underlying: error)
        }
        return TCPListener(accepts: listener, queued: queued, failures: failures)
    }

    func bindUDP(port: Int, group: MultiThreadedEventLoopGroup) async throws -> DatagramChannel {
        do {
            return try await DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 9216))
                .bind(host: configuration.bindAddress, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try DatagramChannel(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ReplayServerError(
                .bindFailed, "cannot listen on UDP \(configuration.bindAddress):\(port)", underlying: error)
        }
    }
}

/// On a listening socket: logs failed accepts (out of file descriptors, out of memory), at most once a second with
/// the count since the last line; NIO's accept backoff, after this handler, then pauses accepting briefly.
private final class AcceptFailureLogger: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let kind: String
    let logger: Logger
    private var lastLog: NIODeadline?
    private var suppressed = 0

    init(kind: String, logger: Logger) {
        self.kind = kind
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let now = NIODeadline.now()
        if let lastLog, now - lastLog < .seconds(1) {
            suppressed += 1
        } else {
            logger.warning(
                "accept failed",
                metadata: [
                    "wehe.channel": "\(kind)", "wehe.error": "\(error)",
                    "wehe.failures.since_last": "\(suppressed + 1)",
                ])
            lastLog = now
            suppressed = 0
        }
        context.fireErrorCaught(error)
    }
}
