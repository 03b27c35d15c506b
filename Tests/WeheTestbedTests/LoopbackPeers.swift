import NIOCore
import NIOPosix
import Synchronization

/// Test peers on loopback: a scripted TCP server, a UDP echo-style server, and clients that talk to them.
enum LoopbackPeers {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    typealias Datagrams = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    /// What a scripted server received, per connection.
    final class Received: Sendable {
        private let requests = Mutex<[[UInt8]]>([])
        var all: [[UInt8]] { requests.withLock { $0 } }
        func append(_ bytes: [UInt8]) { requests.withLock { $0.append(bytes) } }
    }

    /// Runs a TCP server on 127.0.0.1 (system port) during `body`. Per connection it reads until it has
    /// `requestLength` bytes (or until the client's end of stream), records them, sends `response`, and closes.
    static func withTCPServer<Result: Sendable>(
        requestLength: Int,
        response: [UInt8],
        _ body: (_ port: Int, _ received: Received) async throws -> Result
    ) async throws -> Result {
        let received = Received()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: channel) }
            }
        let port = listener.channel.localAddress?.port ?? 0
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await listener.executeThenClose { connections in
                    try await withThrowingDiscardingTaskGroup { inner in
                        for try await connection in connections {
                            inner.addTask {
                                try? await connection.executeThenClose { inbound, outbound in
                                    var request: [UInt8] = []
                                    if requestLength > 0 {
                                        for try await chunk in inbound {
                                            request += Array(buffer: chunk)
                                            if request.count >= requestLength { break }
                                        }
                                    }
                                    received.append(request)
                                    try await outbound.write(ByteBuffer(bytes: response))
                                }
                            }
                        }
                    }
                }
            }
            defer { group.cancelAll() }
            return try await body(port, received)
        }
    }

    /// Connects to `port`, sends `request`, and reads until the peer closes; `onChunk` sees the running total.
    /// With `halfClose`, the client shuts its sending side down after the request.
    static func tcpExchange(
        port: Int,
        request: [UInt8],
        halfClose: Bool = false,
        onChunk: @Sendable (Int) -> Void = { _ in }
    ) async throws -> [UInt8] {
        let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Connection(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
                }
            }
        return try await client.executeThenClose { inbound, outbound in
            if !request.isEmpty { try await outbound.write(ByteBuffer(bytes: request)) }
            if halfClose { outbound.finish() }
            var response: [UInt8] = []
            for try await chunk in inbound {
                response += Array(buffer: chunk)
                onChunk(response.count)
            }
            return response
        }
    }

    /// Runs a UDP server on 127.0.0.1 during `body`: to every datagram it answers with `replies` datagrams of
    /// `replySize` bytes (byte value = datagram index) sent back to back.
    static func withUDPServer<Result: Sendable>(
        replies: Int,
        replySize: Int,
        _ body: (_ port: Int, _ received: Received) async throws -> Result
    ) async throws -> Result {
        let received = Received()
        let socket = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: channel) }
            }
        let port = socket.channel.localAddress?.port ?? 0
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await socket.executeThenClose { inbound, outbound in
                    for try await envelope in inbound {
                        received.append(Array(buffer: envelope.data))
                        for index in 0..<replies {
                            let data = ByteBuffer(
                                bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: replySize))
                            try await outbound.write(
                                AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: data))
                        }
                    }
                }
            }
            defer { group.cancelAll() }
            return try await body(port, received)
        }
    }

    /// A UDP client socket on 127.0.0.1; `body` gets its inbound datagrams and its writer.
    static func withUDPClient<Result: Sendable>(
        _ body: (
            NIOAsyncChannelInboundStream<AddressedEnvelope<ByteBuffer>>,
            NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>
        ) async throws -> Result
    ) async throws -> Result {
        let socket = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try Datagrams(wrappingChannelSynchronously: channel) }
            }
        return try await socket.executeThenClose { inbound, outbound in try await body(inbound, outbound) }
    }

    /// Bytes 0, 1, 2 … 250, 0, 1 … (no byte pattern of interest occurs by accident).
    static func filler(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8($0 % 251) }
    }
}
