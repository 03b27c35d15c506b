import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization
import WeheWire

/// One side-channel connection (protocol.md section 5): framed messages both ways, `STARTED`/`DONE` notifications
/// routed to a handler wherever they arrive, and a timeout on every wait.
final class SideChannelConnection: Sendable {
    private let channel: any Channel
    private let inbox: NIOLoopBound<FrameInboxHandler>
    let host: String
    let port: Int

    private init(channel: any Channel, inbox: NIOLoopBound<FrameInboxHandler>, host: String, port: Int) {
        self.channel = channel
        self.inbox = inbox
        self.host = host
        self.port = port
    }

    /// Connects (and completes the TLS handshake when `tls` is given).
    static func connect(
        host: String,
        port: Int,
        tls: NIOSSLContext?,
        connectTimeout: Duration,
        onNotification: @escaping @Sendable (SideChannelMessage.Notification) -> Void
    ) async throws(ReplayClientError) -> SideChannelConnection {
        let sniName = TLSSettings.serverName(for: host)
        // The inbox is handed out by the initializer rather than looked up in the pipeline afterwards: a failed TLS
        // handshake closes the channel (and empties the pipeline) right after connecting, and the lookup would then
        // hide the TLS error behind a "handler not found".
        let installed = Mutex<NIOLoopBound<FrameInboxHandler>?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let inbox = FrameInboxHandler(
                        eventLoop: channel.eventLoop, expectsHandshake: tls != nil, onNotification: onNotification)
                    if let tls {
                        let handler = try NIOSSLClientHandler(context: tls, serverHostname: sniName)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHandler(inbox)
                    installed.withLock { $0 = NIOLoopBound(inbox, eventLoop: channel.eventLoop) }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            throw NetworkErrors.connectError(error, what: "the side channel", host: host, port: port)
        }
        guard let inbox = installed.withLock({ $0 }) else {
            channel.close(promise: nil)
            throw ReplayClientError(.unreachable, "cannot set up the side channel to \(host):\(port)")
        }
        do {
            let connection = SideChannelConnection(channel: channel, inbox: inbox, host: host, port: port)
            if tls != nil {
                let timeout = connectTimeout.timeAmount
                try await channel.eventLoop.flatSubmit { inbox.value.handshake(timeout: timeout) }
                    .value(onCancel: { channel.close(promise: nil) })
            }
            return connection
        } catch {
            channel.close(promise: nil)
            throw NetworkErrors.connectError(error, what: "the side channel", host: host, port: port)
        }
    }

    /// Whether the connection is still open (a connection opened ahead of its replay may have been closed by the
    /// server meanwhile).
    var isOpen: Bool { channel.isActive }

    /// Sends framed text messages in one write (one segment where they fit), in order.
    func send(_ bodies: [String]) async throws(ReplayClientError) {
        let bytes = bodies.flatMap { SideChannelFramer.frame($0) }
        let channel = self.channel
        do {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).value(onCancel: {
                channel.close(promise: nil)
            })
        } catch {
            throw failure(error, doing: "sending '\(bodies.first?.prefix(20) ?? "")'")
        }
    }

    /// Receives the next message that is not a `STARTED`/`DONE` notification.
    func receive(timeout: Duration, expecting what: String) async throws(ReplayClientError) -> [UInt8] {
        let inbox = self.inbox
        let channel = self.channel
        let amount = timeout.timeAmount
        do {
            return try await channel.eventLoop.flatSubmit { inbox.value.next(timeout: amount) }
                .value(onCancel: { channel.close(promise: nil) })
        } catch {
            throw failure(error, doing: "waiting for \(what)")
        }
    }

    /// Starts closing the connection (TLS close_notify, then the socket) and returns at once. For a side channel
    /// whose exchange is complete: the server has answered everything, and waiting for its close_notify cost a
    /// round trip whenever it had not closed first (after a test's last replay it analyses before it closes).
    func closeWithoutWaiting() {
        channel.close(mode: .all, promise: nil)
    }

    /// Closes the connection (TLS close_notify, then the socket); waits at most a second.
    func close() async {
        let channel = self.channel
        let done = channel.eventLoop.makePromise(of: Void.self)
        let timer = channel.eventLoop.scheduleTask(in: .seconds(1)) { done.succeed(()) }
        channel.close(mode: .all).whenComplete { _ in
            timer.cancel()
            done.succeed(())
        }
        _ = try? await done.futureResult.get()
    }

    private func failure(_ error: any Error, doing what: String) -> ReplayClientError {
        if Task.isCancelled || error is ReadCancelled || error is CancellationError {
            return ReplayClientError(.cancelled, "the test was cancelled")
        }
        if let error = error as? SideChannelFailure {
            switch error {
            case .timedOut:
                return ReplayClientError(.serverStoppedAnswering, "the server stopped answering while \(what)")
            case .closed:
                return ReplayClientError(.protocolViolation, "the server closed the side channel while \(what)")
            case .malformed(let text):
                return ReplayClientError(.protocolViolation, "the server sent a malformed message: \(text)")
            case .failed(let text):
                return ReplayClientError(.protocolViolation, "side channel failed while \(what): \(text)")
            }
        }
        // The handshake is over when the connection exists: a server that then drops the connection without a TLS
        // close_notify (the reference server does when it lacks a replay's data) has closed it, TLS did not fail.
        if let error = error as? NIOSSLError, case .uncleanShutdown = error {
            return ReplayClientError(.protocolViolation, "the server closed the side channel while \(what)")
        }
        if let error = error as? ChannelError, error == .ioOnClosedChannel || error == .eof || error == .alreadyClosed {
            return ReplayClientError(.protocolViolation, "the server closed the side channel while \(what)")
        }
        if NetworkErrors.isTLSError(error) {
            return ReplayClientError(.tlsFailed, "TLS with the side channel failed: \(NetworkErrors.describe(error))")
        }
        return ReplayClientError(
            .protocolViolation, "side channel failed while \(what): \(NetworkErrors.describe(error))")
    }
}

/// Why a side-channel wait failed.
enum SideChannelFailure: Error {
    case timedOut
    case closed
    case malformed(String)
    case failed(String)
}

/// Decodes frames on the event loop and hands them to one waiter at a time.
final class FrameInboxHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let eventLoop: any EventLoop
    private let onNotification: @Sendable (SideChannelMessage.Notification) -> Void
    private var framer = SideChannelFramer()
    private var frames: [[UInt8]] = []
    private var waiter: (promise: EventLoopPromise<[UInt8]>, timer: Scheduled<Void>)?
    private var terminal: (any Error)?
    private var handshakeDone: Bool
    private var handshakeWaiter: (promise: EventLoopPromise<Void>, timer: Scheduled<Void>)?

    init(
        eventLoop: any EventLoop,
        expectsHandshake: Bool,
        onNotification: @escaping @Sendable (SideChannelMessage.Notification) -> Void
    ) {
        self.eventLoop = eventLoop
        self.onNotification = onNotification
        self.handshakeDone = !expectsHandshake
    }

    func handshake(timeout: TimeAmount) -> EventLoopFuture<Void> {
        if let terminal { return eventLoop.makeFailedFuture(terminal) }
        if handshakeDone { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: timeout) {
            bound.value.finishHandshake(.failure(SideChannelFailure.timedOut))
        }
        handshakeWaiter = (promise, timer)
        return promise.futureResult
    }

    func next(timeout: TimeAmount) -> EventLoopFuture<[UInt8]> {
        if !frames.isEmpty { return eventLoop.makeSucceededFuture(frames.removeFirst()) }
        if let terminal { return eventLoop.makeFailedFuture(terminal) }
        let promise = eventLoop.makePromise(of: [UInt8].self)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: timeout) {
            bound.value.failWaiter(SideChannelFailure.timedOut)
        }
        waiter = (promise, timer)
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        framer.append(buffer.readableBytesView)
        do {
            while let frame = try framer.nextFrame() {
                if let notification = SideChannelMessage.Notification(parsing: frame) {
                    onNotification(notification)
                } else if let waiter {
                    self.waiter = nil
                    waiter.timer.cancel()
                    waiter.promise.succeed(frame)
                } else {
                    frames.append(frame)
                }
            }
        } catch {
            terminate(SideChannelFailure.malformed(error.description))
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent {
            handshakeDone = true
            finishHandshake(.success(()))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        terminate(SideChannelFailure.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        terminate(error)
        context.close(promise: nil)
    }

    private func terminate(_ error: any Error) {
        if terminal == nil { terminal = error }
        finishHandshake(.failure(error))
        failWaiter(error)
    }

    private func failWaiter(_ error: any Error) {
        guard let waiter else { return }
        self.waiter = nil
        waiter.timer.cancel()
        waiter.promise.fail(error)
    }

    private func finishHandshake(_ result: Result<Void, any Error>) {
        guard let waiter = handshakeWaiter else { return }
        handshakeWaiter = nil
        waiter.timer.cancel()
        waiter.promise.completeWith(result)
    }
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var inNanoseconds: Int64 {
        let parts = components
        let (seconds, overflow) = parts.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return Int64.max }
        return seconds + parts.attoseconds / 1_000_000_000
    }

    /// The NIO time amount.
    var timeAmount: TimeAmount { .nanoseconds(inNanoseconds) }
}
