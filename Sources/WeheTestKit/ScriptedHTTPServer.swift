import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A plain-HTTP server on loopback that answers each request with the next of a list of answers (the last one again
/// once the list runs out) and remembers what it was asked: for a client's handling of a server's statuses in an
/// exact order (a 503 and then an answer), which a real server gives only in a race.
public final class ScriptedHTTPServer: Sendable {
    /// One answer: its status and its body.
    public struct Answer: Sendable {
        public var status: Int
        public var body: String
        public init(status: Int = 200, body: String) {
            self.status = status
            self.body = body
        }
    }

    struct State {
        var answers: [Answer]
        var asked: [String] = []
    }

    /// The answers left and the requests seen, shared with the connections' handlers.
    final class Script: Sendable {
        let state: Mutex<State>
        init(_ answers: [Answer]) { state = Mutex(State(answers: answers)) }
    }

    let channel: any Channel
    let script: Script
    /// The loopback address it listens on.
    public let host: String
    /// Its port.
    public let port: Int

    private init(channel: any Channel, script: Script, host: String, port: Int) {
        self.channel = channel
        self.script = script
        self.host = host
        self.port = port
    }

    /// Starts a server that gives `answers` in order.
    public static func start(host: String = "127.0.0.1", answers: [Answer]) async throws -> ScriptedHTTPServer {
        precondition(!answers.isEmpty, "a scripted server needs at least one answer")
        let script = Script(answers)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        ScriptedHTTPHandler(next: { target in
                            script.state.withLock { state in
                                state.asked.append(target)
                                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
                            }
                        }))
                }
            }
            .bind(host: host, port: 0).get()
        return ScriptedHTTPServer(channel: channel, script: script, host: host, port: channel.localAddress?.port ?? 0)
    }

    /// The request targets (path and query) asked so far, in order.
    public var asked: [String] { script.state.withLock { $0.asked } }

    /// Stops listening.
    public func stop() async {
        try? await channel.close()
    }
}

/// Answers one request per connection with the next scripted answer.
final class ScriptedHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let next: @Sendable (String) -> ScriptedHTTPServer.Answer
    private var target = ""

    init(next: @escaping @Sendable (String) -> ScriptedHTTPServer.Answer) {
        self.next = next
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): target = head.uri
        case .body: break
        case .end:
            let answer = next(target)
            var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status))
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: String(answer.body.utf8.count))
            head.headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: answer.body)))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
