import NIOCore
import NIOPosix
import Synchronization
import WeheCore
import WeheReplay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The TCP side of a replay (protocol.md section 6.1): one connection per flow, opened lazily at the flow's first
/// payload, TCP_NODELAY, recorded bytes written as they are (never wrapped in TLS), responses counted on the event
/// loop without copying.
final class TCPReplayTransport: ReplayTransport {
    /// Where each flow connects: `(host, port)` from the port map.
    private let destinations: [CSPair: (host: String, port: Int)]
    private let connectTimeout: Duration
    private let channels = Mutex<[CSPair: ReplayConnection]>([:])
    private let meterBox = Mutex<ThroughputMeter?>(nil)

    init(destinations: [CSPair: (host: String, port: Int)], connectTimeout: Duration) {
        self.destinations = destinations
        self.connectTimeout = connectTimeout
    }

    func start(meter: ThroughputMeter) async throws {
        meterBox.withLock { $0 = meter }
    }

    func send(_ packet: ReplayPacket, index: Int) async throws {
        let connection = try await connection(for: packet.csPair)
        try await connection.write(packet.payload)
    }

    func receiveResponse(
        length: Int,
        for packet: ReplayPacket,
        index: Int,
        limits: ReplayReadLimits,
        meter: ThroughputMeter
    ) async throws -> ResponseRead {
        guard let connection = channels.withLock({ $0[packet.csPair] }) else {
            throw WeheReplayError(.transportFailed, "no connection for flow \(packet.csPair)", packetIndex: index)
        }
        return try await connection.read(length: length, limits: limits)
    }

    func drain(remaining: Duration) async throws {}

    func close() async {
        let all = channels.withLock { channels in
            defer { channels.removeAll() }
            return Array(channels.values)
        }
        for connection in all { await connection.close() }
    }

    private func connection(for flow: CSPair) async throws -> ReplayConnection {
        if let existing = channels.withLock({ $0[flow] }) { return existing }
        guard let destination = destinations[flow] else {
            throw WeheReplayError(.invalidTrace, "the port map has no destination for flow \(flow)")
        }
        guard let meter = meterBox.withLock({ $0 }) else {
            throw WeheReplayError(.transportFailed, "the transport was not started")
        }
        let connection = try await ReplayConnection.connect(
            host: destination.host, port: destination.port, timeout: connectTimeout, meter: meter)
        channels.withLock { $0[flow] = connection }
        return connection
    }
}

/// One TCP replay connection and its counting handler.
final class ReplayConnection: Sendable {
    private let channel: any Channel
    private let counter: NIOLoopBound<ResponseCountingHandler>

    private init(channel: any Channel, counter: NIOLoopBound<ResponseCountingHandler>) {
        self.channel = channel
        self.counter = counter
    }

    static func connect(host: String, port: Int, timeout: Duration, meter: ThroughputMeter) async throws
        -> ReplayConnection
    {
        // The handler is handed out by the initializer: a peer that closes at once empties the pipeline.
        let installed = Mutex<NIOLoopBound<ResponseCountingHandler>?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout.timeAmount)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = ResponseCountingHandler(eventLoop: channel.eventLoop, meter: meter)
                    try channel.pipeline.syncOperations.addHandler(handler)
                    installed.withLock { $0 = NIOLoopBound(handler, eventLoop: channel.eventLoop) }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw WeheReplayError(
                .connectFailed,
                "cannot connect to the replay port \(host):\(port): \(NetworkErrors.describe(error))",
                underlying: DescribedError(error))
        }
        guard let counter = installed.withLock({ $0 }) else {
            channel.close(promise: nil)
            throw WeheReplayError(.connectFailed, "cannot set up the replay connection to \(host):\(port)")
        }
        return ReplayConnection(channel: channel, counter: counter)
    }

    func write(_ payload: [UInt8]) async throws {
        let channel = self.channel
        do {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: payload)).value(onCancel: {
                channel.close(promise: nil)
            })
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw WeheReplayError(
                .transportFailed, "writing to the replay connection failed: \(NetworkErrors.describe(error))",
                underlying: DescribedError(error))
        }
    }

    func read(length: Int, limits: ReplayReadLimits) async throws -> ResponseRead {
        let counter = self.counter
        let channel = self.channel
        do {
            return try await channel.eventLoop.flatSubmit {
                counter.value.expect(
                    length, remaining: limits.remaining.timeAmount, idle: limits.idleTimeout.timeAmount)
            }.value(onCancel: {
                channel.eventLoop.execute { counter.value.cancel() }
            })
        } catch is ReadCancelled {
            throw CancellationError()
        }
    }

    func close() async {
        _ = try? await channel.close().get()
    }
}

/// Counts response bytes into the meter as they arrive and completes one pending read at a time. Bytes beyond the
/// current read (none with a correct server) count toward the next one.
final class ResponseCountingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private struct Pending {
        var promise: EventLoopPromise<ResponseRead>
        var needed: Int
        var received: Int
        var deadline: Scheduled<Void>
        var idleCheck: Scheduled<Void>?
        var idle: TimeAmount
    }

    private let eventLoop: any EventLoop
    private let meter: ThroughputMeter
    private var surplus = 0
    private var closed = false
    private var failure: (any Error)?
    private var pending: Pending?
    private var lastRead = NIODeadline.now()

    init(eventLoop: any EventLoop, meter: ThroughputMeter) {
        self.eventLoop = eventLoop
        self.meter = meter
    }

    func expect(_ length: Int, remaining: TimeAmount, idle: TimeAmount) -> EventLoopFuture<ResponseRead> {
        if surplus >= length {
            surplus -= length
            return eventLoop.makeSucceededFuture(.complete)
        }
        let already = surplus
        surplus = 0
        if let failure { return eventLoop.makeFailedFuture(failure) }
        if closed { return eventLoop.makeSucceededFuture(.closed(received: already)) }
        let promise = eventLoop.makePromise(of: ResponseRead.self)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let deadline = eventLoop.scheduleTask(in: max(remaining, .zero)) { bound.value.deadlinePassed() }
        lastRead = .now()
        pending = Pending(
            promise: promise, needed: length, received: already, deadline: deadline, idleCheck: nil, idle: idle)
        scheduleIdleCheck(at: lastRead + idle)
        return promise.futureResult
    }

    func cancel() {
        guard let pending else { return }
        self.pending = nil
        pending.deadline.cancel()
        pending.idleCheck?.cancel()
        pending.promise.fail(ReadCancelled())
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = unwrapInboundIn(data).readableBytes
        meter.add(count)
        lastRead = .now()
        guard var current = pending else {
            surplus += count
            return
        }
        current.received += count
        if current.received >= current.needed {
            surplus += current.received - current.needed
            pending = nil
            current.deadline.cancel()
            current.idleCheck?.cancel()
            current.promise.succeed(.complete)
        } else {
            pending = current
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        if let current = pending {
            pending = nil
            current.deadline.cancel()
            current.idleCheck?.cancel()
            current.promise.succeed(.closed(received: current.received))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset after the response counts as a close; anything else fails the pending read.
        if let current = pending {
            pending = nil
            current.deadline.cancel()
            current.idleCheck?.cancel()
            if let io = error as? IOError, io.errnoCode == ECONNRESET {
                current.promise.succeed(.closed(received: current.received))
            } else {
                current.promise.fail(
                    WeheReplayError(
                        .transportFailed, "the replay connection failed: \(NetworkErrors.describe(error))",
                        underlying: DescribedError(error)))
            }
        } else {
            failure = WeheReplayError(
                .transportFailed, "the replay connection failed: \(NetworkErrors.describe(error))",
                underlying: DescribedError(error))
        }
        context.close(promise: nil)
    }

    private func deadlinePassed() {
        guard let current = pending else { return }
        pending = nil
        current.idleCheck?.cancel()
        current.promise.succeed(.deadlineReached(received: current.received))
    }

    private func scheduleIdleCheck(at time: NIODeadline) {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let check = eventLoop.scheduleTask(deadline: time) { bound.value.idleCheckFired() }
        pending?.idleCheck = check
    }

    private func idleCheckFired() {
        guard let current = pending else { return }
        let due = lastRead + current.idle
        if NIODeadline.now() < due {
            scheduleIdleCheck(at: due)
            return
        }
        pending = nil
        current.deadline.cancel()
        current.promise.fail(
            WeheReplayError(
                .serverStoppedAnswering,
                "no response bytes for \(current.idle.nanoseconds / 1_000_000_000) s (\(current.received) of \(current.needed) received)"
            ))
    }
}

/// Keeps the description of a non-`Sendable` error.
struct DescribedError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = NetworkErrors.describe(error) }
}
