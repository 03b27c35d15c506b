public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// An M-Lab-style access envelope service for tests (WSS with a test certificate, or plain WS) on a loopback
/// address: `GET /v0/envelope/access?access_token=<token>` upgrades to a WebSocket that stays open and silent.
/// Per token it can refuse (an HTTP status instead of the upgrade) or never answer; it records when each envelope
/// opened and closed, and can close every open envelope (the access ending in the middle of a test).
///
/// As M-Lab's envelope does, it closes each envelope at its deadline, max(token expiry, open + `deadline`)
/// (10 minutes by default, settable for tests), and the tokens it issues (`issueToken`, used by the fake locate
/// service) are valid once, for their lifetime (1 minute by default); an expired or reused token gets 401. Tokens it
/// did not issue are treated by their behaviour (accepted by default).
public final class FakeEnvelopeService: Sendable {
    /// How the service treats a token.
    public enum Behaviour: Sendable {
        /// Upgrade and keep the WebSocket open.
        case accept
        /// Answer with this status instead of upgrading.
        case refuse(status: Int)
        /// Never answer the upgrade request.
        case hang
    }

    /// One envelope that was opened.
    public struct Session: Sendable {
        /// Its token.
        public var token: String
        /// When it opened.
        public var openedAt: Date
        /// When it closed, once it has.
        public var closedAt: Date?
        /// Frames other than pong and close the client sent (the client must send nothing).
        public var framesReceived: Int
        /// When the service closes it at the latest.
        public var deadline: Date = .distantFuture
        /// Whether the service closed it at its deadline (not the client).
        public var closedAtDeadline = false
    }

    struct State {
        var behaviours: [String: Behaviour] = [:]
        var sessions: [Session] = []
        var open: [Int: any Channel] = [:]
        var connections: [any Channel] = []
        var upgradeRequests: [String] = []
        /// The session of each upgraded connection.
        var positions: [ObjectIdentifier: Int] = [:]
        var deadline: Duration = .seconds(600)
        /// Issued tokens and their expiry.
        var issued: [String: Date] = [:]
        var usedTokens: Set<String> = []
        /// Upgrade requests (1-based, in arrival order) answered with a status instead.
        var refusedRequests: [Int: Int] = [:]
    }

    final class Box: Sendable {
        let state = Mutex(State())
    }

    private let channel: any Channel
    private let box: Box
    /// The address.
    public let host: String
    /// The port.
    public let port: Int
    /// Whether it speaks TLS.
    public let secure: Bool

    private init(channel: any Channel, box: Box, host: String, port: Int, secure: Bool) {
        self.channel = channel
        self.box = box
        self.host = host
        self.port = port
        self.secure = secure
    }

    /// Starts the service (TLS when a certificate and key are given).
    public static func start(
        host: String = "127.0.0.1", certificatePath: String?, keyPath: String?
    ) async throws -> FakeEnvelopeService {
        let tls: NIOSSLContext? =
            if let certificatePath, let keyPath {
                try NIOSSLContext(
                    configuration: .makeServerConfiguration(
                        certificateChain: try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) },
                        privateKey: .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem))))
            } else {
                nil
            }
        let box = Box()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    box.state.withLock { $0.connections.append(channel) }
                    let upgrader = NIOWebSocketServerUpgrader(
                        shouldUpgrade: { channel, head in
                            let token = Self.token(in: head.uri)
                            let behaviour = box.state.withLock { state -> Behaviour in
                                state.upgradeRequests.append(token)
                                return Self.decide(token, &state)
                            }
                            switch behaviour {
                            case .accept:
                                // Recorded open before the upgrade answer goes out: a client that sees its envelope
                                // open always finds it recorded here.
                                Self.recordOpen(channel, token: token, in: box)
                                return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
                            case .refuse: return channel.eventLoop.makeSucceededFuture(nil)
                            case .hang: return channel.eventLoop.makePromise(of: HTTPHeaders?.self).futureResult
                            }
                        },
                        upgradePipelineHandler: { channel, head in
                            // The refusing handler sits before the WebSocket decoder: it must not see frames.
                            channel.pipeline.removeHandler(name: RefusingHandler.name).flatMap {
                                channel.pipeline.addHandler(
                                    OpenEnvelopeHandler(box: box, token: Self.token(in: head.uri)))
                            }
                        })
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try channel.pipeline.syncOperations.addHandler(
                        RefusingHandler(box: box), name: RefusingHandler.name)
                }
            }
            .bind(host: host, port: 0).get()
        return FakeEnvelopeService(
            channel: channel, box: box, host: host, port: channel.localAddress?.port ?? 0, secure: tls != nil)
    }

    /// How an upgrade request is treated: a refusal set for its position, an issued token's checks (expired or
    /// used: 401; else used now), or the token's behaviour.
    static func decide(_ token: String, _ state: inout State) -> Behaviour {
        if let status = state.refusedRequests[state.upgradeRequests.count] {
            state.behaviours[token] = .refuse(status: status)
            return .refuse(status: status)
        }
        if let expiry = state.issued[token] {
            if state.usedTokens.contains(token) || expiry <= Date() {
                state.behaviours[token] = .refuse(status: 401)
                return .refuse(status: 401)
            }
            state.usedTokens.insert(token)
        }
        return state.behaviours[token] ?? .accept
    }

    /// Records an envelope as open from now, and as closed when its connection closes; closes it from the
    /// service's side at its deadline.
    static func recordOpen(_ channel: any Channel, token: String, in box: Box) {
        let opened = Date()
        let position = box.state.withLock { state -> Int in
            let expiry = state.issued[token] ?? opened
            let deadline = max(expiry, opened.addingTimeInterval(Self.seconds(state.deadline)))
            state.sessions.append(
                Session(token: token, openedAt: opened, closedAt: nil, framesReceived: 0, deadline: deadline))
            let position = state.sessions.count - 1
            state.open[position] = channel
            state.positions[ObjectIdentifier(channel)] = position
            return position
        }
        let deadline = box.state.withLock { $0.sessions[position].deadline }
        let wait = TimeAmount.nanoseconds(Int64(max(0, deadline.timeIntervalSinceNow) * 1e9))
        let timer = channel.eventLoop.scheduleTask(in: wait) {
            guard channel.isActive else { return }
            box.state.withLock { $0.sessions[position].closedAtDeadline = true }
            var data = channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .normalClosure)
            let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
            channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
        }
        channel.closeFuture.whenComplete { _ in timer.cancel() }
        channel.closeFuture.whenComplete { _ in
            box.state.withLock { state in
                state.sessions[position].closedAt = Date()
                state.open[position] = nil
            }
        }
    }

    static func token(in uri: String) -> String {
        guard let range = uri.range(of: "access_token=") else { return "" }
        return String(uri[range.upperBound...].prefix { $0 != "&" })
    }

    /// The envelope URL for a token, as the locate service would give it.
    public func url(token: String) -> String {
        "\(secure ? "wss" : "ws")://\(host):\(port)/v0/envelope/access?access_token=\(token)"
    }

    /// Sets the deadline of envelopes opened from now on: max(token expiry, open + `deadline`).
    public func setDeadline(_ deadline: Duration) {
        box.state.withLock { $0.deadline = deadline }
    }

    /// Issues a token valid once, for `lifetime` from now (as locate's access tokens, 1 minute).
    public func issueToken(lifetime: Duration = .seconds(60)) -> String {
        let token = "issued-" + UUID().uuidString.lowercased()
        box.state.withLock { $0.issued[token] = Date().addingTimeInterval(Self.seconds(lifetime)) }
        return token
    }

    /// Answers the `number`-th upgrade request (1-based, counted from the start) with `status` (503: the machine's
    /// client slots are taken), whatever its token.
    public func refuseRequest(number: Int, status: Int) {
        box.state.withLock { $0.refusedRequests[number] = status }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let parts = duration.components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }

    /// Sets how a token is treated (default: accepted).
    public func setBehaviour(_ behaviour: Behaviour, for token: String) {
        box.state.withLock { $0.behaviours[token] = behaviour }
    }

    /// Every envelope opened so far.
    public var sessions: [Session] { box.state.withLock { $0.sessions } }

    /// The tokens of every upgrade request, in order (refused ones included).
    public var upgradeRequests: [String] { box.state.withLock { $0.upgradeRequests } }

    /// How many envelopes are open now.
    public var openCount: Int { box.state.withLock { $0.open.count } }

    /// Closes every open envelope from the service's side (the access ends).
    public func closeAll() {
        for channel in box.state.withLock({ Array($0.open.values) }) {
            var data = channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .policyViolation)
            let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
            channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Waits until `condition` holds for the sessions, up to `timeout`; returns whether it did.
    public func wait(
        for timeout: Duration = .seconds(10), until condition: @Sendable ([Session]) -> Bool
    ) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if condition(sessions) { return true }
            try? await clock.sleep(for: .milliseconds(10))
        }
        return condition(sessions)
    }

    /// Stops listening and closes every connection.
    public func stop() async {
        try? await channel.close().get()
        for child in box.state.withLock({ $0.connections }) { try? await child.close().get() }
    }
}

/// Records an open envelope and its end; counts what the client sends.
final class OpenEnvelopeHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let box: FakeEnvelopeService.Box
    let token: String
    let index: Mutex<Int> = Mutex(-1)

    init(box: FakeEnvelopeService.Box, token: String) {
        self.box = box
        self.token = token
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let key = ObjectIdentifier(context.channel)
        let position = box.state.withLock { $0.positions[key] ?? -1 }
        index.withLock { $0 = position }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let position = index.withLock { $0 }
        switch frame.opcode {
        case .connectionClose:
            let reply = WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
        case .pong: break
        default:
            guard position >= 0 else { return }
            box.state.withLock { $0.sessions[position].framesReceived += 1 }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Answers requests that were not upgraded with the token's refusal status (404 for other paths).
final class RefusingHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let name = "envelope-refusal"
    let box: FakeEnvelopeService.Box

    init(box: FakeEnvelopeService.Box) {
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let token = FakeEnvelopeService.token(in: head.uri)
        var status = 404
        if case .refuse(let code) = box.state.withLock({ $0.behaviours[token] }) { status = code }
        var response = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
        response.headers.add(name: "Content-Length", value: "0")
        response.headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
