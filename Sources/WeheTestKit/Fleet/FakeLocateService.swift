public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A locate v2 service for tests (HTTPS with a test certificate, or plain HTTP), on a loopback address: answers
/// `GET /v2/nearest/wehe/replay` with whatever the test set (targets, an error status with an `error` object, an
/// empty list, garbage, or nothing at all) and records every request.
public final class FakeLocateService: Sendable {
    /// What the service answers.
    public enum Answer: Sendable {
        /// This status and body.
        case body(status: Int, text: String)
        /// Reads the request and never answers.
        case hang
    }

    /// One request the service received.
    public struct Request: Sendable {
        /// Path and query.
        public var target: String
        /// When it arrived.
        public var at: Date
    }

    struct State {
        var answer: Answer
        var siteAnswers: [String: Answer] = [:]
        var requests: [Request] = []
        var channels: [any Channel] = []
    }

    private let channel: any Channel
    private let holder: StateBox
    /// The address the service listens on.
    public let host: String
    /// The port.
    public let port: Int
    /// Whether it speaks TLS.
    public let secure: Bool

    private init(channel: any Channel, holder: StateBox, host: String, port: Int, secure: Bool) {
        self.channel = channel
        self.holder = holder
        self.host = host
        self.port = port
        self.secure = secure
    }

    /// The base URL to pass as `--locate-url`.
    public var baseURL: String { "\(secure ? "https" : "http")://\(host):\(port)" }

    /// Starts the service.
    /// - Parameters:
    ///   - host: a loopback address.
    ///   - certificatePath: PEM certificate for TLS (with `keyPath`); `nil` serves plain HTTP.
    ///   - keyPath: PEM private key.
    ///   - answer: the first answer.
    public static func start(
        host: String = "127.0.0.1", certificatePath: String?, keyPath: String?, answer: Answer
    ) async throws -> FakeLocateService {
        let tls: NIOSSLContext? =
            if let certificatePath, let keyPath {
                try NIOSSLContext(
                    configuration: .makeServerConfiguration(
                        certificateChain: try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) },
                        privateKey: .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem))))
            } else {
                nil
            }
        let holder = StateBox(answer: answer)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    holder.state.withLock { $0.channels.append(channel) }
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(LocateHandler(holder: holder))
                }
            }
            .bind(host: host, port: 0).get()
        return FakeLocateService(
            channel: channel, holder: holder, host: host, port: channel.localAddress?.port ?? 0, secure: tls != nil)
    }

    /// Changes the answer.
    public func setAnswer(_ answer: Answer) {
        holder.state.withLock { $0.answer = answer }
    }

    /// Answers requests for exactly this one site (`?site=<site>`, as a WeHeY client asks per site) with `answer`;
    /// other requests get the general answer.
    public func setAnswer(_ answer: Answer, forSite site: String) {
        holder.state.withLock { $0.siteAnswers[site] = answer }
    }

    /// The site a request target asks for, when it names exactly one (`site=`).
    static func site(of target: String) -> String? {
        guard let query = URLComponents(string: target)?.queryItems else { return nil }
        let sites = query.filter { $0.name == "site" }.compactMap(\.value)
        return sites.count == 1 ? sites[0] : nil
    }

    /// The requests received so far.
    public var requests: [Request] { holder.state.withLock { $0.requests } }

    /// Stops listening and closes every connection.
    public func stop() async {
        try? await channel.close().get()
        for child in holder.state.withLock({ $0.channels }) { try? await child.close().get() }
    }

    /// One target of a locate answer.
    public struct Target: Sendable {
        /// The machine name.
        public var machine: String
        /// City.
        public var city: String
        /// Country.
        public var country: String
        /// The access envelope URL.
        public var envelopeURL: String

        /// Creates a target.
        public init(machine: String, city: String = "Testville", country: String = "ZZ", envelopeURL: String) {
            self.machine = machine
            self.city = city
            self.country = country
            self.envelopeURL = envelopeURL
        }
    }

    /// A locate v2 body with these targets and, optionally, a `next_request`.
    public static func body(_ targets: [Target], nextRequest: (nbf: Date, exp: Date, url: String)? = nil) -> String {
        var object: [String: Any] = [
            "results": targets.map { target in
                [
                    "machine": target.machine,
                    "location": ["city": target.city, "country": target.country],
                    "urls": [
                        "wss://:4443/v0/envelope/access": target.envelopeURL,
                        "wss://:443/v0/other": "wss://example.invalid/other",
                    ],
                ] as [String: Any]
            }
        ]
        if let nextRequest {
            let format = ISO8601DateFormatter()
            object["next_request"] = [
                "nbf": format.string(from: nextRequest.nbf), "exp": format.string(from: nextRequest.exp),
                "url": nextRequest.url,
            ]
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// A locate v2 error body.
    public static func errorBody(status: Int, title: String, detail: String) -> String {
        let object: [String: Any] = [
            "error": ["type": "?", "title": title, "status": status, "detail": detail]
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// Shares the service's state with its connection handlers.
final class StateBox: Sendable {
    let state: Mutex<FakeLocateService.State>
    init(answer: FakeLocateService.Answer) { state = Mutex(FakeLocateService.State(answer: answer)) }
}

/// Answers one locate request per connection.
final class LocateHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let holder: StateBox
    private var target = ""

    init(holder: StateBox) {
        self.holder = holder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): target = head.uri
        case .body: break
        case .end:
            let request = FakeLocateService.Request(target: target, at: Date())
            let answer = holder.state.withLock { state -> FakeLocateService.Answer in
                state.requests.append(request)
                if let site = FakeLocateService.site(of: request.target), let answer = state.siteAnswers[site] {
                    return answer
                }
                return state.answer
            }
            guard case .body(let status, let text) = answer else { return }
            var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: String(text.utf8.count))
            head.headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
