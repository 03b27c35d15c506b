public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A locate v2 service for tests (HTTPS with a test certificate, or plain HTTP), on a loopback address: answers
/// `GET /v2/nearest/wehe/replay` with whatever the test set (targets, an error status with an `error` object, an
/// empty list, garbage, or nothing at all) and records every request with its headers.
///
/// As M-Lab's locate does, it limits requests per address and User-Agent (40 an hour by default; over it: 429 with
/// `Retry-After`), answers `/v2/priority/nearest/…` only with a known `Authorization: Bearer` token (else 401), and,
/// once `issue(machines:envelopes:)` is called, answers each request with fresh single-use tokens of the envelope
/// service, copying the request's `client_*` parameters into each envelope URL.
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
        /// Header fields, names in lower case (the first value of each).
        public var headers: [String: String] = [:]
        /// The client's address.
        public var remoteAddress: String = ""

        /// The value of query parameter `name`, when given.
        public func parameter(_ name: String) -> String? {
            URLComponents(string: target)?.queryItems?.first { $0.name == name }?.value
        }
    }

    /// Issues fresh envelope tokens per request.
    struct Issuer: Sendable {
        var machines: [String]
        var envelopes: FakeEnvelopeService
        var tokenLifetime: Duration
    }

    struct State {
        var answer: Answer
        var siteAnswers: [String: Answer] = [:]
        var requests: [Request] = []
        var channels: [any Channel] = []
        var issuer: Issuer?
        var requestsPerHour = 40
        /// Answered (not rate-limited) request times per address and User-Agent.
        var counted: [String: [Date]] = [:]
        var priorityTokens: Set<String> = []
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

    /// Answers every request with these machines and a fresh token of `envelopes` for each (valid once, for
    /// `tokenLifetime`); a site request gets the machines of that site.
    public func issue(machines: [String], envelopes: FakeEnvelopeService, tokenLifetime: Duration = .seconds(60)) {
        holder.state.withLock {
            $0.issuer = Issuer(machines: machines, envelopes: envelopes, tokenLifetime: tokenLifetime)
        }
    }

    /// Sets the rate limit: requests an hour per address and User-Agent.
    public func setRateLimit(perHour: Int) {
        holder.state.withLock { $0.requestsPerHour = perHour }
    }

    /// Accepts `token` as a priority-access bearer token.
    public func addPriorityToken(_ token: String) {
        holder.state.withLock { _ = $0.priorityTokens.insert(token) }
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
    private var headers: [String: String] = [:]

    init(holder: StateBox) {
        self.holder = holder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            target = head.uri
            headers = [:]
            for (name, value) in head.headers where headers[name.lowercased()] == nil {
                headers[name.lowercased()] = value
            }
        case .body: break
        case .end:
            let request = FakeLocateService.Request(
                target: target, at: Date(), headers: headers,
                remoteAddress: context.channel.remoteAddress?.ipAddress ?? "")
            let (answer, extra) = holder.state.withLock { state in
                state.requests.append(request)
                return Self.answer(request, &state)
            }
            guard case .body(let status, let text) = answer else { return }
            var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
            head.headers.add(name: "Content-Type", value: "application/json")
            for (name, value) in extra { head.headers.add(name: name, value: value) }
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

    /// The answer to a request (and extra header fields): 429 over the rate limit, 401 for a priority request
    /// without a known token, else the site's answer, the issued tokens, or the set answer.
    static func answer(
        _ request: FakeLocateService.Request, _ state: inout FakeLocateService.State
    ) -> (FakeLocateService.Answer, [(String, String)]) {
        let key = request.remoteAddress + " " + (request.headers["user-agent"] ?? "")
        let hourAgo = request.at.addingTimeInterval(-3600)
        var times = (state.counted[key] ?? []).filter { $0 > hourAgo }
        if times.count >= state.requestsPerHour {
            let retry = times.first.map { Int($0.timeIntervalSince(hourAgo).rounded(.up)) } ?? 3600
            state.counted[key] = times
            return (
                .body(
                    status: 429,
                    text: FakeLocateService.errorBody(
                        status: 429, title: "Too Many Requests", detail: "rate limit exceeded")),
                [("Retry-After", String(max(retry, 1)))]
            )
        }
        times.append(request.at)
        state.counted[key] = times
        let path = request.target.split(separator: "?").first.map(String.init) ?? request.target
        if path.hasPrefix("/v2/priority/") {
            let bearer = request.headers["authorization"].flatMap { value -> String? in
                value.hasPrefix("Bearer ") ? String(value.dropFirst("Bearer ".count)) : nil
            }
            guard let bearer, state.priorityTokens.contains(bearer) else {
                return (
                    .body(
                        status: 401,
                        text: FakeLocateService.errorBody(
                            status: 401, title: "Unauthorized", detail: "invalid or missing priority token")), []
                )
            }
        }
        let site = FakeLocateService.site(of: request.target)
        if let site, let answer = state.siteAnswers[site] { return (answer, []) }
        guard let issuer = state.issuer else { return (state.answer, []) }
        let machines = issuer.machines.filter { machine in
            guard let site else { return true }
            return machine.split(separator: ".").first?.hasSuffix("-" + site) == true
        }
        let identity = (URLComponents(string: request.target)?.queryItems ?? []).filter { $0.name.hasPrefix("client_") }
        let targets = machines.map { machine in
            var url = issuer.envelopes.url(token: issuer.envelopes.issueToken(lifetime: issuer.tokenLifetime))
            for item in identity { url += "&\(item.name)=\(item.value ?? "")" }
            return FakeLocateService.Target(machine: machine, envelopeURL: url)
        }
        return (.body(status: 200, text: FakeLocateService.body(targets)), [])
    }
}
