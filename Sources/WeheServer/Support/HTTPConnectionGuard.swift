package import HummingbirdCore
package import Logging
import NIOCore
import NIOHTTP1
package import NIOSSL

/// Bounds the connections of a Hummingbird listener (the analyzer's HTTP and HTTPS ports, the operator dashboard):
/// each takes a slot of the server's connection budget (its pool's share) or is closed at once; the first byte must
/// arrive within `firstByteTimeout` of the accept (a TLS handshake starts with the client's first byte); a whole
/// request, head and body, within `requestTimeout` of the accept; the next request within `idleTimeout` of the
/// previous response, and all the waits between requests of one connection together within `keepAliveIdleTotal`
/// (so that a request now and then cannot keep a connection forever). A connection with no request in progress
/// (before its first complete request, or between an answer and the next request) may be evicted for a new one
/// when its share is full, and the analyzer's and dashboard's connections are capped per client address and
/// network (`ConnectionLimiter.caps(_:)`).
package struct HTTPConnectionGuard: Sendable {
    /// The shared budget.
    package let limiter: ConnectionLimiter
    /// The share this listener draws from.
    package let pool: ConnectionLimiter.Pool
    /// Accept to first byte.
    package let firstByteTimeout: Duration
    /// Accept (or the end of the previous response's wait) to a complete request.
    package let requestTimeout: Duration
    /// End of a response to the next complete request.
    package let idleTimeout: Duration
    /// All the waits between requests of one connection, summed.
    package let keepAliveIdleTotal: Duration
    /// Where refusals and timeouts are logged.
    package let logger: Logger

    /// Creates a guard.
    package init(
        limiter: ConnectionLimiter, pool: ConnectionLimiter.Pool, firstByteTimeout: Duration,
        requestTimeout: Duration, idleTimeout: Duration, keepAliveIdleTotal: Duration? = nil, logger: Logger
    ) {
        self.limiter = limiter
        self.pool = pool
        self.firstByteTimeout = firstByteTimeout
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.keepAliveIdleTotal = keepAliveIdleTotal ?? idleTimeout * 2
        self.logger = logger
    }

    /// A Hummingbird server builder for HTTP/1.1, over TLS when `tls` is given, with these bounds.
    package func serverBuilder(tls: TLSConfiguration? = nil) throws -> HTTPServerBuilder {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        let bounds = self
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(
                base: HTTP1Channel(
                    responder: responder, configuration: .init(idleTimeout: TimeAmount(bounds.idleTimeout))),
                tls: context, bounds: bounds)
        }
    }
}

/// HTTP/1.1 child channel with the guard's handlers: budget and first-byte deadline at the front, TLS, then the
/// request deadline right after the HTTP decoder.
///
/// The listener's accept stream carries the connection as a plain channel, set up with the front guard, TLS and an
/// `EarlyReadBuffer` that keeps what arrives; the HTTP handlers and the async wrapper are added in `handle`, once the
/// server's loop has taken it, and the buffer hands them what it kept. A connection still queued in the stream when
/// the server stops owns no async writer (released unfinished, NIO stops the process: "Deinited NIOAsyncWriter without
/// calling finish()"); the buffer closes it at the request deadline.
private struct GuardedHTTPChannel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
    }
    let base: HTTP1Channel
    let tls: NIOSSLContext?
    let bounds: HTTPConnectionGuard

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FrontGuardHandler(bounds: bounds))
            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            // A complete request is due within the request timeout of the accept: a connection still queued then
            // (its server stopped) is closed.
            try channel.pipeline.syncOperations.addHandler(
                EarlyReadBuffer(closeAfter: TimeAmount(bounds.requestTimeout)))
            return Value(channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        let channel = value.channel
        // The server is stopping: close the connection without wrapping it.
        guard !Task.isCancelled else {
            channel.close(promise: nil)
            return
        }
        let base = self.base
        let bounds = self.bounds
        let wrapped: HTTP1Channel.Value
        do {
            // Fails for a connection closed while queued (budget, first-byte deadline, the client left).
            wrapped = try await channel.eventLoop.flatSubmit {
                base.setup(channel: channel, logger: logger).map { value in
                    // The async wrapper exists from here: it is returned whatever happens, and finished by the
                    // HTTP handler; a connection that cannot get its deadline or its early reads is closed instead.
                    do {
                        let decoder = try channel.pipeline.syncOperations.handler(
                            type: ByteToMessageHandler<HTTPRequestDecoder>.self)
                        try channel.pipeline.syncOperations.addHandler(
                            RequestDeadlineHandler(bounds: bounds), position: .after(decoder))
                        try channel.removeEarlyReadBuffer()
                    } catch {
                        logger.debug(
                            "connection closed: setup failed",
                            metadata: ["wehe.channel": "\(bounds.pool.rawValue)", "wehe.error": "\(error)"])
                        channel.close(promise: nil)
                    }
                    return value
                }
            }.get()
        } catch {
            logger.debug(
                "connection closed: setup failed",
                metadata: ["wehe.channel": "\(bounds.pool.rawValue)", "wehe.error": "\(error)"])
            channel.close(promise: nil)
            return
        }
        await base.handle(value: wrapped, logger: logger)
    }
}

/// First in the pipeline: takes the connection's budget slot (closing it when none is left) and closes it when no
/// byte arrives within the first-byte timeout.
private final class FrontGuardHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let bounds: HTTPConnectionGuard
    private var ticket: ConnectionLimiter.Ticket?
    private var firstByte: Scheduled<Void>?
    private var started = false

    init(bounds: HTTPConnectionGuard) { self.bounds = bounds }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        let peer = AddressText.normalized(context.channel.remoteAddress?.ipAddress ?? "unknown")
        let channel = context.channel
        // Until its first complete request, the connection may be evicted for a newer one when the share is full.
        guard
            let ticket = bounds.limiter.admit(address: peer, pool: bounds.pool, close: { channel.close(promise: nil) })
        else {
            bounds.logger.notice(
                "connection refused: connection budget reached",
                metadata: [
                    "wehe.channel": "\(bounds.pool.rawValue)", "wehe.peer": "\(AddressText.redacted(peer))",
                    "wehe.open": "\(bounds.limiter.current)",
                ])
            context.close(promise: nil)
            return
        }
        self.ticket = ticket
        let logger = bounds.logger
        let pool = bounds.pool
        firstByte = context.eventLoop.scheduleTask(in: TimeAmount(bounds.firstByteTimeout)) {
            logger.debug("connection closed: no first byte in time", metadata: ["wehe.channel": "\(pool.rawValue)"])
            channel.close(promise: nil)
        }
    }

    /// The connection sent a complete request: it keeps its slot until it has answered it.
    func established() {
        if let ticket { bounds.limiter.established(ticket) }
    }

    /// The connection answered every request it sent: it may be evicted again while it waits for the next.
    func idle() {
        if let ticket { bounds.limiter.idle(ticket) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        firstByte?.cancel()
        firstByte = nil
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    private func release() {
        firstByte?.cancel()
        firstByte = nil
        if let ticket {
            bounds.limiter.release(ticket)
            self.ticket = nil
        }
    }
}

/// After the HTTP decoder: a request must be complete (its end decoded) within the request timeout of the accept,
/// and the next one within the idle timeout of the previous response's end and within what is left of the
/// keep-alive idle total; otherwise the connection is closed. Tells the front guard when the connection has a
/// request in progress (not evictable) and when it has answered them all (evictable).
private final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    let bounds: HTTPConnectionGuard
    private var deadline: Scheduled<Void>?
    /// Requests read completely and not yet answered (pipelining allows more than one).
    private var pending = 0
    /// When the connection last started to wait for a request after an answer.
    private var idleSince: NIODeadline?
    /// Time spent waiting between requests so far.
    private var idleSpent = TimeAmount.zero

    init(bounds: HTTPConnectionGuard) { self.bounds = bounds }

    func handlerAdded(context: ChannelHandlerContext) { arm(context, bounds.requestTimeout) }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func arm(_ context: ChannelHandlerContext, _ timeout: Duration) {
        deadline?.cancel()
        let channel = context.channel
        let logger = bounds.logger
        let pool = bounds.pool
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            logger.debug(
                "connection closed: request not complete in time", metadata: ["wehe.channel": "\(pool.rawValue)"])
            channel.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            if let since = idleSince {
                idleSpent = idleSpent + (NIODeadline.now() - since)
                idleSince = nil
            }
        case .end:
            deadline?.cancel()
            deadline = nil
            pending += 1
            if pending == 1 { front(context)?.established() }
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        pending = max(0, pending - 1)
        guard pending == 0 else {
            context.write(data, promise: promise)
            return
        }
        let left = TimeAmount(bounds.keepAliveIdleTotal) - idleSpent
        guard left > .zero else {
            // The connection has waited between requests for as long as it may: closed once this answer is out.
            let channel = context.channel
            let written = promise ?? context.eventLoop.makePromise()
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.write(data, promise: written)
            return
        }
        idleSince = .now()
        arm(context, min(bounds.idleTimeout, .nanoseconds(left.nanoseconds)))
        front(context)?.idle()
        context.write(data, promise: promise)
    }

    private func front(_ context: ChannelHandlerContext) -> FrontGuardHandler? {
        try? context.pipeline.syncOperations.handler(type: FrontGuardHandler.self)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}
