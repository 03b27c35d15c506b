import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// An open M-Lab access envelope: a WebSocket to the URL the locate service gave (it carries its own access token).
/// While it is open the machine's firewall lets this client in; nothing is sent on it (pings are answered, as the
/// WebSocket protocol requires). Close it when the test ends.
public final class AccessEnvelope: Sendable {
    let channel: any Channel
    /// The machine the envelope belongs to.
    public let machine: String

    init(channel: any Channel, machine: String) {
        self.channel = channel
        self.machine = machine
    }

    /// Opens the envelope at `url` (`wss://` or `ws://`), exactly as given.
    /// - Parameters:
    ///   - url: the envelope URL.
    ///   - machine: the machine it belongs to (for messages).
    ///   - timeout: longest wait for the connection, TLS and the WebSocket upgrade together.
    ///   - additionalTrustPEM: certificates trusted next to the system's roots.
    ///   - addressOverrides: host name → address to connect to instead of resolving the name.
    /// - Throws: `FleetError` `.noEnvelope` with the reason, or `.invalidConfiguration` for a URL that is not one.
    public static func open(
        url: String,
        machine: String,
        timeout: Duration,
        additionalTrustPEM: String? = nil,
        addressOverrides: [String: String] = [:]
    ) async throws(FleetError) -> AccessEnvelope {
        let endpoint = try Endpoint(url: url)
        let tls = try endpoint.secure ? FleetLocator.webTLS(additionalPEM: additionalTrustPEM) : nil
        let connectHost = addressOverrides[endpoint.host] ?? endpoint.host
        let sniName = TLSSettings.isIPLiteral(endpoint.host) ? nil : endpoint.host
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout.timeAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let watcher = UpgradeWatcher(promise: channel.eventLoop.makePromise())
                    let upgrader = NIOWebSocketClientUpgrader(upgradePipelineHandler: { channel, _ in
                        channel.pipeline.removeHandler(watcher).flatMap {
                            channel.pipeline.addHandler(EnvelopeFrameHandler())
                        }.map { watcher.promise.succeed() }
                    })
                    let sync = channel.pipeline.syncOperations
                    if let tls {
                        // A host name connected by address still verifies against the name.
                        try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: sniName))
                    }
                    try sync.addHTTPClientHandlers(
                        leftOverBytesStrategy: .forwardBytes,
                        withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try sync.addHandler(watcher)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: connectHost, port: endpoint.port).get()
        } catch {
            throw FleetError(
                .noEnvelope, "cannot reach \(endpoint.host):\(endpoint.port): \(NetworkErrors.describe(error))")
        }
        do {
            var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: endpoint.target)
            let defaultPort = endpoint.secure ? 443 : 80
            let hostName = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
            head.headers.add(
                name: "Host", value: endpoint.port == defaultPort ? hostName : "\(hostName):\(endpoint.port)")
            head.headers.add(name: "User-Agent", value: HTTPClient.userAgent)
            head.headers.add(name: "Content-Length", value: "0")
            let requestHead = head
            let timeoutAmount = timeout.timeAmount
            try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
                guard let watcher = try? channel.pipeline.syncOperations.handler(type: UpgradeWatcher.self) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                let timer = channel.eventLoop.scheduleTask(in: timeoutAmount) {
                    watcher.promise.fail(EnvelopeTimeout())
                }
                channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                return watcher.promise.futureResult.always { _ in timer.cancel() }
            }.value(onCancel: { channel.close(promise: nil) })
        } catch {
            channel.close(promise: nil)
            if Task.isCancelled { throw FleetError(.noEnvelope, "cancelled") }
            throw FleetError(.noEnvelope, Self.reason(error, timeout: timeout))
        }
        return AccessEnvelope(channel: channel, machine: machine)
    }

    /// Whether the envelope is still open.
    public var isOpen: Bool { channel.isActive }

    /// Returns once the envelope has closed (either side), or when the calling task is cancelled.
    public func waitUntilClosed() async {
        let (closed, continuation) = AsyncStream<Void>.makeStream()
        channel.closeFuture.whenComplete { _ in continuation.finish() }
        await withTaskCancellationHandler {
            for await _ in closed {}
        } onCancel: {
            continuation.finish()
        }
    }

    /// Closes the envelope (a WebSocket close frame, then the connection).
    public func close() async {
        let channel = self.channel
        guard channel.isActive else { return }
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        _ = try? await channel.writeAndFlush(frame).get()
        try? await channel.close().get()
    }

    /// Runs `body` while the envelope is open. If the envelope closes first, `body` is cancelled (the client then
    /// closes its side channel, so the server frees the slot) and `.envelopeClosed` is thrown; an error of `body`
    /// after the envelope closed is reported as `.envelopeClosed` too.
    public func guarding<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let machine = self.machine
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    await self.waitUntilClosed()
                    return nil
                }
                defer { group.cancelAll() }
                while let next = try await group.next() {
                    if let value = next { return value }
                    if !self.isOpen { throw FleetError(.envelopeClosed, Self.closedMessage(machine)) }
                }
                throw CancellationError()
            }
        } catch let error as FleetError {
            throw error
        } catch {
            if !isOpen, !Task.isCancelled { throw FleetError(.envelopeClosed, Self.closedMessage(machine)) }
            throw error
        }
    }

    static func closedMessage(_ machine: String) -> String {
        "the access envelope of \(machine) closed during the test; the test was stopped (run it again)"
    }

    static func reason(_ error: any Error, timeout: Duration) -> String {
        switch error {
        case is EnvelopeTimeout: "no answer within \(timeout.wholeSeconds) s"
        case let refused as EnvelopeRefused: "refused (HTTP \(refused.status))"
        case let error as NIOHTTPClientUpgradeError: "the WebSocket upgrade failed (\(error))"
        default:
            NetworkErrors.isTLSError(error)
                ? "TLS failed (\(NetworkErrors.describe(error)))" : NetworkErrors.describe(error)
        }
    }
}

/// The upgrade did not complete in time.
struct EnvelopeTimeout: Error {}

/// The server answered the upgrade with another status.
struct EnvelopeRefused: Error {
    var status: Int
}

/// Completes the promise when the upgrade fails: a response other than 101, an error, or the connection closing.
final class UpgradeWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart

    let promise: EventLoopPromise<Void>

    init(promise: EventLoopPromise<Void>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            promise.fail(EnvelopeRefused(status: Int(head.status.code)))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

/// Keeps the open envelope quiet: answers pings and close frames, ignores everything else.
final class EnvelopeFrameHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            let reply = WebSocketFrame(
                fin: true, opcode: .connectionClose, maskKey: .random(), data: frame.unmaskedData)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
