internal import NIOCore
internal import NIOPosix

/// The TCP side of the proxy: accepts connections on a route's listening address, opens one upstream connection
/// per client connection and relays both directions, shaping matched flows.
struct TCPRelay: Sendable {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    typealias Listener = NIOAsyncChannel<Connection, Never>

    let route: ThrottlingProxyConfiguration.Route
    let context: RelayContext

    /// Opens the listening socket.
    static func bind(
        _ route: ThrottlingProxyConfiguration.Route,
        group: any EventLoopGroup
    ) async throws -> Listener {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: route.listen.host, port: route.listen.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Connection(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(isOutboundHalfClosureEnabled: true)
                    )
                }
            }
    }

    /// Accepts and relays until cancelled; one child task per connection.
    func serve(_ listener: Listener) async throws {
        try await listener.executeThenClose { connections in
            await withDiscardingTaskGroup { group in
                do {
                    for try await client in connections {
                        group.addTask { await relay(client) }
                    }
                } catch {
                    // The listening socket failed or was closed: stop accepting, let running flows finish.
                }
            }
        }
    }

    private func relay(_ client: Connection) async {
        let (inspector, shaper) = context.newFlow(on: route)
        let upstream: Connection
        do {
            upstream = try await ClientBootstrap(group: context.group)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .connect(host: route.upstream.host, port: route.upstream.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try Connection(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                    }
                }
        } catch {
            context.counters.update { $0.failedFlows += 1 }
            try? await client.executeThenClose { _, _ in }
            return
        }
        do {
            try await client.executeThenClose { clientIn, clientOut in
                try await upstream.executeThenClose { upstreamIn, upstreamOut in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await pump(clientIn, into: upstreamOut, .upload, inspector, shaper)
                        }
                        group.addTask {
                            try await pump(upstreamIn, into: clientOut, .download, inspector, shaper)
                        }
                        try await group.waitForAll()
                    }
                }
            }
        } catch {
            if !Task.isCancelled { context.counters.update { $0.failedFlows += 1 } }
        }
    }

    /// Relays one direction until its end of stream, then half-closes the other side.
    private func pump(
        _ source: NIOAsyncChannelInboundStream<ByteBuffer>,
        into sink: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        _ direction: FlowDirection,
        _ inspector: FlowInspector,
        _ shaper: FlowShaper
    ) async throws {
        for try await var chunk in source {
            let matched = context.inspect(chunk, direction: direction, inspector: inspector)
            while chunk.readableBytes > 0 {
                let plan = shaper.plan(
                    available: chunk.readableBytes,
                    direction: direction,
                    matched: matched,
                    relayed: inspector.relayedBytes(direction),
                    now: context.clock.now(),
                    isDatagram: false
                )
                guard let piece = chunk.readSlice(length: plan.length) else { break }
                if let departure = plan.departure { try await context.clock.sleepUntil(departure) }
                try await sink.write(piece)
                inspector.addRelayed(plan.length, direction: direction)
                context.counters.relayed(plan, direction: direction, isDatagram: false)
            }
        }
        sink.finish()
    }
}
