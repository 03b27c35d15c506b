import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// Runs a `ReplayServer` on loopback with OS-chosen ports for the duration of a test body.
enum ServerHarness {
    struct Running {
        let ports: ReplayServer.ListeningPorts
        let store: InMemoryResultStore
        let server: ReplayServer
        /// Listening port of a recorded TCP port.
        func tcp(_ recorded: Int) -> Int { ports.tcp[recorded] ?? -1 }

        /// Waits (up to `timeout`) until the server holds at most `count` sessions: a side channel the client closed
        /// is released by the server a moment later, on its own event loop. Returns whether it got there.
        func waitForSessions(atMost count: Int, timeout: Duration = .seconds(10)) async throws -> Bool {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: timeout)
            while clock.now < deadline {
                if await server.status().sessions <= count { return true }
                try await Task.sleep(for: .milliseconds(5))
            }
            return await server.status().sessions <= count
        }
    }

    static var logger: Logger {
        var logger = Logger(label: "wehe-server-test")
        logger.logLevel = ProcessInfo.processInfo.environment["WEHE_TEST_LOG"] == "1" ? .debug : .critical
        return logger
    }

    static func configuration(
        replays: String = TestResources.fixtureReplays,
        store: InMemoryResultStore
    ) -> ReplayServerConfiguration {
        var configuration = ReplayServerConfiguration(replayDirectory: replays, store: store, logger: logger)
        configuration.bindAddress = "127.0.0.1"
        configuration.sideChannelTLSPort = nil
        configuration.sideChannelPlainPort = 0
        configuration.analyzerTLSPort = nil
        configuration.analyzerPlainPort = 0
        configuration.replayPorts = .ephemeral
        configuration.extraReplayPorts = []
        configuration.limits.shutdownGracePeriod = .seconds(1)
        return configuration
    }

    static func run<T: Sendable>(
        replays: String = TestResources.fixtureReplays,
        configure: (inout ReplayServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (Running) async throws -> T
    ) async throws -> T {
        let store = InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true))
        var configuration = configuration(replays: replays, store: store)
        configure(&configuration)
        let server = try ReplayServer(configuration: configuration)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await server.run()
                return nil
            }
            let ports = try await server.listeningPorts()
            let result = try await body(Running(ports: ports, store: store, server: server))
            group.cancelAll()
            while let next = try await group.next() {
                if let next { return next }
            }
            return result
        }
    }
}

/// A raw TCP client for tests (async, so it never blocks the cooperative threads the server also uses).
struct RawConnection {
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>

    static func connect(
        port: Int,
        host: String = "127.0.0.1",
        from source: String? = nil,
        tls: NIOSSLContext? = nil,
        receiveBuffer: Int? = nil,
        deadline: TimeAmount = .seconds(60)
    ) async throws -> RawConnection {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
        if let receiveBuffer {
            // Set before connecting, so the advertised window stays small (no receive autotuning).
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        let channel = try await bootstrap.connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                if let tls {
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: nil))
                }
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        // A test client never waits forever: whatever it is waiting for, the connection closes at the deadline, so
        // a server that stops answering fails the test (reads end) instead of hanging the whole test run.
        let nioChannel = channel.channel
        let timer = nioChannel.eventLoop.scheduleTask(in: deadline) { nioChannel.close(promise: nil) }
        nioChannel.closeFuture.whenComplete { _ in timer.cancel() }
        return RawConnection(channel: channel)
    }
}

/// A bare TCP connection without the async wrapper (for idle-connection tests; closed with `close()`).
enum IdleConnection {
    /// Connects to 127.0.0.1:`port`, from `source` when given (another loopback address: the server caps connections
    /// per address and per network).
    static func open(port: Int, from source: String? = nil) async throws -> any Channel {
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        return try await bootstrap.connect(host: "127.0.0.1", port: port).get()
    }
}

/// Side-channel client steps over a raw connection.
struct FramedPeer: ~Copyable {
    var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    var framer = SideChannelFramer()
    var notifications: [String] = []

    init(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.iterator = inbound.makeAsyncIterator()
        self.outbound = outbound
    }

    func send(_ body: String) async throws {
        try await outbound.write(ByteBuffer(bytes: SideChannelFramer.frame(body)))
    }

    func sendRaw(_ bytes: [UInt8]) async throws {
        try await outbound.write(ByteBuffer(bytes: bytes))
    }

    /// The next frame; `nil` when the server closed the connection.
    mutating func receive() async throws -> String? {
        while true {
            if let frame = try framer.nextFrame() { return String(decoding: frame, as: UTF8.self) }
            guard let buffer = try await iterator.next() else { return nil }
            framer.append(buffer.readableBytesView)
        }
    }

    /// The next frame that is not a UDP notification (notifications are kept).
    mutating func receiveReply() async throws -> String? {
        while let text = try await receive() {
            if text.hasPrefix("STARTED;") || (text.hasPrefix("DONE;") && text.dropFirst(5).allSatisfy(\.isNumber)) {
                notifications.append(text)
                continue
            }
            return text
        }
        return nil
    }

    /// Reads until the server closes; returns whether it did (true) within the stream.
    mutating func drainUntilClosed() async throws -> Int {
        var count = 0
        while let buffer = try await iterator.next() { count += buffer.readableBytes }
        return count
    }
}
