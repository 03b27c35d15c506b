import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Prometheus
import Synchronization
import Testing
import WeheServer
import WeheTestKit

/// A side channel that ends before its ID declaration: closed by the client without a byte (the adaptive client's
/// connection opened ahead and not needed) is counted as unused, not as an error; one left idle is counted as a
/// first-message timeout; one that sent part of a declaration stays an error.
@Suite("Side channels that end before their declaration", .timeLimit(.minutes(6)))
struct UnusedSideChannelTests {
    /// The value of `name{labels}` in the exposition (0 when the series does not exist yet).
    static func value(_ name: String, _ labels: String, in registry: PrometheusCollectorRegistry) -> Double {
        for line in String(decoding: registry.emitToBuffer(), as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, words[0] == "\(name){\(labels)}" { return Double(words[1]) ?? -1 }
        }
        return 0
    }

    /// Fulfils `handshake` once: when the TLS handshake is over, or with an error when the connection closes first.
    final class HandshakeWaiter: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let handshake: EventLoopPromise<Void>
        private let done = Atomic<Bool>(false)

        init(_ handshake: EventLoopPromise<Void>) { self.handshake = handshake }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent, !done.exchange(true, ordering: .relaxed) {
                handshake.succeed()
            }
            context.fireUserInboundEventTriggered(event)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if !done.exchange(true, ordering: .relaxed) { handshake.fail(ChannelError.ioOnClosedChannel) }
            context.fireChannelInactive()
        }
    }

    /// Opens a TLS connection, waits for its handshake and for the server's handler to have it, and closes it (with
    /// close_notify) without a byte of data. The connection is closed after 150 s whatever happens, so nothing waits
    /// forever.
    static func openAndCloseTLS(port: Int, tls: NIOSSLContext, server: ServerHarness.Running) async throws {
        let started = server.server.protocolSeams.sideChannelHandlersStarted
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handshake = channel.eventLoop.makePromise(of: Void.self)
                    try channel.pipeline.syncOperations.addHandler(
                        try NIOSSLClientHandler(context: tls, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(handshake))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let guardTimer = channel.eventLoop.scheduleTask(in: .seconds(150)) { channel.close(promise: nil) }
        defer { guardTimer.cancel() }
        let waiter = try await channel.pipeline.handler(type: HandshakeWaiter.self).get()
        try await waiter.handshake.futureResult.get()
        #expect(try await waitUntil { server.server.protocolSeams.sideChannelHandlersStarted > started })
        try await channel.close()
    }

    static func registryAndServer(
        firstMessageTimeout: Duration, files: CertificateFactory.Output? = nil
    ) -> (PrometheusCollectorRegistry, (inout ReplayServerConfiguration) -> Void) {
        let registry = PrometheusCollectorRegistry()
        return (
            registry,
            { configuration in
                configuration.metricsRegistry = registry
                configuration.limits.firstMessageTimeout = firstMessageTimeout
                if let files {
                    configuration.tls = .init(
                        certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
                    configuration.sideChannelTLSPort = 0
                }
            }
        )
    }

    @Test("closed after the TLS handshake without a byte: unused; part of a declaration, then closed: an error")
    func unusedAndPartial() async throws {
        let directory = TestResources.temporaryDirectory("wehe-server-unused")
        let files = try CertificateFactory.issue(into: directory, hostNames: ["127.0.0.1"])
        // A first-message timeout far longer than the test: no connection here may end by it, however loaded the
        // machine.
        let (registry, configure) = Self.registryAndServer(firstMessageTimeout: .seconds(120), files: files)
        try await ServerHarness.run(configure: configure) { server in
            let plain = try #require(server.ports.sideChannelPlain)
            let secure = try #require(server.ports.sideChannelTLS)
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.trustRoots = .file(files.caCertificate)
            settings.certificateVerification = .noHostnameVerification
            let tls = try NIOSSLContext(configuration: settings)
            let unused = { Self.value("wehe_connections_unused_total", "kind=\"side\"", in: registry) }
            let errors = { (reason: String) in
                Self.value("wehe_connection_errors_total", "kind=\"side\",reason=\"\(reason)\"", in: registry)
            }

            // Two TLS connections closed after their handshake without a byte, as the adaptive client closes the
            // side channel it opened ahead for a round that did not come. (Not tried over plain TCP: a connection
            // closed before the server has taken it from its accept queue never reaches the handler, by design.)
            for _ in 0..<2 { try await Self.openAndCloseTLS(port: secure, tls: tls, server: server) }
            #expect(try await Self.waitUntil { unused() == 2 }, "unused: \(unused())")

            // Half a declaration, then the client closes: still an error of the connection.
            let started = server.server.protocolSeams.sideChannelHandlersStarted
            let partial = try await RawConnection.connect(port: plain, deadline: .seconds(30))
            try await partial.channel.executeThenClose { _, outbound in
                try await outbound.write(ByteBuffer(string: "0000000040@abc"))
                #expect(try await Self.waitUntil { server.server.protocolSeams.sideChannelHandlersStarted > started })
            }
            #expect(try await Self.waitUntil { errors("connectionClosed") == 1 })
            #expect(unused() == 2)
            #expect(errors("handshake") == 0)
        }
    }

    @Test("a connection left idle is closed at the first-message timeout and counted as such")
    func idleTimesOut() async throws {
        let (registry, configure) = Self.registryAndServer(firstMessageTimeout: .milliseconds(600))
        try await ServerHarness.run(configure: configure) { server in
            let plain = try #require(server.ports.sideChannelPlain)
            let idle = try await IdleConnection.open(port: plain)
            let guardTimer = idle.eventLoop.scheduleTask(in: .seconds(150)) { idle.close(promise: nil) }
            defer { guardTimer.cancel() }
            try await idle.closeFuture.get()
            #expect(
                try await Self.waitUntil {
                    Self.value(
                        "wehe_connection_errors_total", "kind=\"side\",reason=\"first-message-timeout\"",
                        in: registry) == 1
                })
            #expect(Self.value("wehe_connections_unused_total", "kind=\"side\"", in: registry) == 0)
        }
    }

    /// Polls `condition` every 10 ms for up to 30 s.
    static func waitUntil(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<3000 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
