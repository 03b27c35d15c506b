internal import NIOCore
internal import NIOPosix
import Synchronization

/// The UDP side of the proxy: one listening socket per route; each new client address gets its own upstream
/// socket (so the server sees one flow per client port), its own classification and its own shaped queues.
struct UDPRelay: Sendable {
    typealias Socket = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    let route: ThrottlingProxyConfiguration.Route
    let context: RelayContext

    /// Opens the listening socket.
    static func bind(_ route: ThrottlingProxyConfiguration.Route, group: any EventLoopGroup) async throws
        -> Socket
    {
        try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: route.listen.host, port: route.listen.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Socket(wrappingChannelSynchronously: channel, configuration: Self.socketConfiguration)
                }
            }
    }

    /// Datagram sockets buffer generously: a paused reader must not turn into kernel drops.
    private static let socketConfiguration = Socket.Configuration(
        backPressureStrategy: .init(lowWatermark: 256, highWatermark: 4096)
    )

    /// The live flows, by client address: each one's queue of datagrams towards the server.
    private final class FlowTable: Sendable {
        private struct Entry {
            let id: Int
            let continuation: AsyncStream<ByteBuffer>.Continuation
        }
        private let flows = Mutex<(nextID: Int, entries: [SocketAddress: Entry])>((0, [:]))

        /// Delivers a datagram to an existing flow; `false` when there is none for `address`.
        func deliver(_ data: ByteBuffer, from address: SocketAddress) -> Bool {
            flows.withLock { table in
                guard let entry = table.entries[address] else { return false }
                entry.continuation.yield(data)
                return true
            }
        }

        /// Registers a new flow and returns its identifier.
        func add(_ address: SocketAddress, _ continuation: AsyncStream<ByteBuffer>.Continuation) -> Int {
            flows.withLock { table in
                table.nextID += 1
                table.entries[address] = Entry(id: table.nextID, continuation: continuation)
                return table.nextID
            }
        }

        /// Forgets flow `id` of `address` (a newer flow of the same address stays).
        func remove(_ address: SocketAddress, id: Int) {
            let removed = flows.withLock { table -> Entry? in
                guard table.entries[address]?.id == id else { return nil }
                return table.entries.removeValue(forKey: address)
            }
            removed?.continuation.finish()
        }
    }

    /// Relays until cancelled.
    func serve(_ listener: Socket) async throws {
        let table = FlowTable()
        try await listener.executeThenClose { datagrams, toClients in
            await withDiscardingTaskGroup { group in
                do {
                    for try await envelope in datagrams {
                        let client = envelope.remoteAddress
                        if table.deliver(envelope.data, from: client) { continue }
                        let (uplink, continuation) = AsyncStream.makeStream(
                            of: ByteBuffer.self,
                            bufferingPolicy: .bufferingNewest(4096)
                        )
                        continuation.yield(envelope.data)
                        let id = table.add(client, continuation)
                        group.addTask {
                            await relay(client: client, uplink: uplink, toClients: toClients) {
                                // Forget the flow before it is torn down, so that a datagram arriving meanwhile
                                // opens a new flow instead of being lost in the old one.
                                table.remove(client, id: id)
                            }
                            table.remove(client, id: id)
                        }
                    }
                } catch {
                    // The listening socket failed or was closed: stop, flows end with the group.
                }
            }
        }
    }

    private struct IdleExpired: Error {}

    /// When a flow last carried a datagram either way.
    private final class Activity: Sendable {
        private let last: Mutex<Duration>
        init(_ now: Duration) { last = Mutex(now) }
        func touch(_ now: Duration) { last.withLock { $0 = now } }
        var time: Duration { last.withLock { $0 } }
    }

    private func relay(
        client: SocketAddress,
        uplink: AsyncStream<ByteBuffer>,
        toClients: NIOAsyncChannelOutboundWriter<AddressedEnvelope<ByteBuffer>>,
        onIdle: @escaping @Sendable () -> Void
    ) async {
        let (inspector, shaper) = context.newFlow(on: route)
        let upstream: Socket
        do {
            upstream = try await DatagramBootstrap(group: context.group)
                .connect(host: route.upstream.host, port: route.upstream.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try Socket(wrappingChannelSynchronously: channel, configuration: Self.socketConfiguration)
                    }
                }
        } catch {
            context.counters.update { $0.failedFlows += 1 }
            return
        }
        guard let server = upstream.channel.remoteAddress else {
            context.counters.update { $0.failedFlows += 1 }
            try? await upstream.executeThenClose { _, _ in }
            return
        }
        let lastActivity = Activity(context.clock.now())
        let context = self.context
        do {
            try await upstream.executeThenClose { fromServer, toServer in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let (toServerQueue, toServerIn) = AsyncStream.makeStream(of: (Duration, ByteBuffer).self)
                    let (toClientQueue, toClientIn) = AsyncStream.makeStream(of: (Duration, ByteBuffer).self)
                    group.addTask {
                        for await datagram in uplink {
                            lastActivity.touch(context.clock.now())
                            enqueue(datagram, .upload, inspector, shaper, toServerIn)
                        }
                        toServerIn.finish()
                    }
                    group.addTask {
                        for try await envelope in fromServer {
                            lastActivity.touch(context.clock.now())
                            enqueue(envelope.data, .download, inspector, shaper, toClientIn)
                        }
                        toClientIn.finish()
                    }
                    group.addTask {
                        for await (departure, data) in toServerQueue {
                            try await context.clock.sleepUntil(departure)
                            try await toServer.write(AddressedEnvelope(remoteAddress: server, data: data))
                        }
                    }
                    group.addTask {
                        for await (departure, data) in toClientQueue {
                            try await context.clock.sleepUntil(departure)
                            try await toClients.write(AddressedEnvelope(remoteAddress: client, data: data))
                        }
                    }
                    group.addTask {
                        // Forget the flow after a quiet period, like a conntrack entry timing out.
                        let idle = context.configuration.udpIdleTimeout
                        while true {
                            let deadline = lastActivity.time + idle
                            try await context.clock.sleepUntil(deadline)
                            if context.clock.now() >= lastActivity.time + idle {
                                onIdle()
                                context.counters.update { $0.expiredFlows += 1 }
                                throw IdleExpired()
                            }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch is IdleExpired {
            // A normal end.
        } catch {
            if !Task.isCancelled { context.counters.update { $0.failedFlows += 1 } }
        }
    }

    /// Classifies and plans one datagram, and queues it for its departure time unless it is dropped.
    private func enqueue(
        _ datagram: ByteBuffer,
        _ direction: FlowDirection,
        _ inspector: FlowInspector,
        _ shaper: FlowShaper,
        _ queue: AsyncStream<(Duration, ByteBuffer)>.Continuation
    ) {
        let matched = context.inspect(datagram, direction: direction, inspector: inspector)
        let plan = shaper.plan(
            available: datagram.readableBytes,
            direction: direction,
            matched: matched,
            relayed: inspector.relayedBytes(direction),
            now: context.clock.now(),
            isDatagram: true
        )
        context.counters.relayed(plan, direction: direction, isDatagram: true)
        guard let departure = plan.departure else { return }
        inspector.addRelayed(plan.length, direction: direction)
        queue.yield((departure, datagram))
    }
}
