import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore

/// A minimal HTTP/1.1 client for the analyzer (`/Results`) and `WHATSMYIPMAN`: one request per connection
/// (`Connection: close`), optional TLS with the configured trust, a timeout on the whole exchange.
struct HTTPClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]
        /// The response's header fields (a locate 429's `Retry-After`).
        var headers: HTTPHeaders = [:]
    }

    /// The User-Agent of every request: the client's name and version (locate keys its rate limits on it).
    static let userAgent = "wehe-swift/\(WeheVersion.number)"

    /// Largest body accepted (the analyzer answers are a few hundred bytes).
    static let maximumBodyLength = 1 << 20

    let tls: NIOSSLContext?
    let connectTimeout: Duration
    let requestTimeout: Duration

    /// Sends one request.
    /// - Throws: `ReplayClientError` (`.unreachable`, `.tlsFailed`, `.serverStoppedAnswering`, `.cancelled`).
    func request(
        method: HTTPMethod,
        host: String,
        port: Int,
        path: String,
        body: [UInt8]? = nil,
        contentType: String? = nil,
        headers extraHeaders: [(name: String, value: String)] = [],
        what: String
    ) async throws(ReplayClientError) -> Response {
        let tls = self.tls
        let sniName = TLSSettings.serverName(for: host)
        let response = Mutex<EventLoopFuture<Response>?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(connectTimeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tls, serverHostname: sniName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    let collector = ResponseCollector(promise: channel.eventLoop.makePromise())
                    try channel.pipeline.syncOperations.addHandler(collector)
                    // Kept here, not looked up later: a failed TLS handshake empties the pipeline at once.
                    response.withLock { $0 = collector.promise.futureResult }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            throw NetworkErrors.connectError(error, what: what, host: host, port: port)
        }
        do {
            let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
            head.headers.add(name: "Host", value: hostHeader)
            head.headers.add(name: "User-Agent", value: Self.userAgent)
            head.headers.add(name: "Accept", value: "*/*")
            for header in extraHeaders { head.headers.add(name: header.name, value: header.value) }
            head.headers.add(name: "Connection", value: "close")
            if let body {
                head.headers.add(name: "Content-Type", value: contentType ?? "application/octet-stream")
                head.headers.add(name: "Content-Length", value: String(body.count))
            }
            let timeout = requestTimeout.timeAmount
            let requestHead = head
            guard let responseFuture = response.withLock({ $0 }) else {
                throw ReplayClientError(.unreachable, "cannot set up the connection to \(what) at \(host):\(port)")
            }
            let result = try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Response> in
                let timer = channel.eventLoop.scheduleTask(in: timeout) {
                    channel.pipeline.fireErrorCaught(HTTPTimeout())
                }
                channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
                if let body {
                    channel.write(
                        HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil)
                }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                return responseFuture.always { _ in timer.cancel() }
            }.value(onCancel: { channel.close(promise: nil) })
            channel.close(promise: nil)
            return result
        } catch {
            channel.close(promise: nil)
            if Task.isCancelled { throw ReplayClientError(.cancelled, "the test was cancelled") }
            if error is HTTPTimeout {
                throw ReplayClientError(.serverStoppedAnswering, "\(what) at \(host):\(port) did not answer in time")
            }
            throw NetworkErrors.connectError(error, what: what, host: host, port: port)
        }
    }
}

/// The whole exchange took longer than the request timeout.
struct HTTPTimeout: Error {}

/// Collects one response.
final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let promise: EventLoopPromise<HTTPClient.Response>
    private var status: Int?
    private var headers: HTTPHeaders = [:]
    private var body: [UInt8] = []
    private var finished = false

    init(promise: EventLoopPromise<HTTPClient.Response>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            headers = head.headers
        case .body(let buffer):
            guard body.count + buffer.readableBytes <= HTTPClient.maximumBodyLength else {
                finish(.failure(HTTPBodyTooLarge()))
                context.close(promise: nil)
                return
            }
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            finish(.success(HTTPClient.Response(status: status ?? 0, body: body, headers: headers)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let status, !body.isEmpty {
            finish(.success(HTTPClient.Response(status: status, body: body, headers: headers)))
        } else {
            finish(.failure(ChannelError.eof))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    /// A channel that never became active (a refused connection) removes its handlers without `channelInactive`;
    /// the promise must still be completed.
    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.ioOnClosedChannel))
    }

    private func finish(_ result: Result<HTTPClient.Response, any Error>) {
        guard !finished else { return }
        finished = true
        promise.completeWith(result)
    }
}

/// The response body exceeded `HTTPClient.maximumBodyLength`.
struct HTTPBodyTooLarge: Error, CustomStringConvertible {
    var description: String { "the response is larger than \(HTTPClient.maximumBodyLength) bytes" }
}
