import Foundation
import NIOCore
import NIOPosix

/// An HTTP/1.1 client for tests that keeps its connection between requests (keep-alive), so that a test can hold
/// many open connections at once and ask on each again. Plain NIO: nothing to finish when it goes away.
struct KeepAliveClient: Sendable {
    let channel: any Channel

    static func open(port: Int, from source: String? = nil) async throws -> KeepAliveClient {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector())
                }
            }
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
        // A test never waits forever.
        let timer = channel.eventLoop.scheduleTask(in: .seconds(60)) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in timer.cancel() }
        return KeepAliveClient(channel: channel)
    }

    /// Sends one keep-alive request; the status of its answer, or `nil` when the server closed the connection first.
    func request(_ path: String, headers: String = "") async throws -> Int? {
        let channel = self.channel
        let text = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)Connection: keep-alive\r\n\r\n"
        return try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Int?> in
            guard channel.isActive,
                let collector = try? channel.pipeline.syncOperations.handler(type: ResponseCollector.self)
            else { return channel.eventLoop.makeSucceededFuture(nil) }
            let promise = channel.eventLoop.makePromise(of: Int?.self)
            collector.waiting = promise
            // A failed write closes the connection, which completes the request with `nil`.
            channel.writeAndFlush(ByteBuffer(string: text)).whenFailure { _ in channel.close(promise: nil) }
            return promise.futureResult
        }.get()
    }

    /// Whether the server has closed the connection.
    var isClosed: Bool { !channel.isActive }

    /// Waits until the server closes the connection.
    func waitClosed() async throws { try await channel.closeFuture.get() }

    func close() { channel.close(promise: nil) }
}

/// Collects one response at a time (head and a `Content-Length` body) and completes the waiting request with its
/// status; a connection closed first completes it with `nil`.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var waiting: EventLoopPromise<Int?>?
    private var received: [UInt8] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += Array(unwrapInboundIn(data).readableBytesView)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = received.indices.first(where: { received[$0...].starts(with: separator) }) else { return }
        let head = String(decoding: received[..<end], as: UTF8.self)
        var length = 0
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        let total = end + separator.count + length
        guard received.count >= total else { return }
        received.removeFirst(total)
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        finish(status)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(nil)
        context.fireChannelInactive()
    }

    func finish(_ status: Int?) {
        let promise = waiting
        waiting = nil
        promise?.succeed(status)
    }
}
