import Hummingbird
package import HummingbirdCore
import HummingbirdTLS
package import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import WeheCore
import WeheWire

/// The Wehe replay and analysis server: side channel (55556 TLS, 55555 plain), TCP and UDP replay listeners on the
/// traces' ports, `WHATSMYIPMAN`, and the analyzer API (56566 HTTPS, 56565 HTTP, `/metrics`).
///
/// A `Service`: `run()` binds every listener, serves until cancelled, and on graceful shutdown (SIGTERM through a
/// `ServiceGroup`) stops admitting, lets running sessions finish for the grace period, then cuts the rest with a
/// recorded reason. Per-connection failures never end `run()`.
package final class ReplayServer: Service, Sendable {
    /// Where the server listens once running.
    package struct ListeningPorts: Sendable, Hashable {
        /// Side channel with TLS.
        package var sideChannelTLS: Int?
        /// Side channel without TLS.
        package var sideChannelPlain: Int?
        /// Analyzer over HTTPS.
        package var analyzerTLS: Int?
        /// Analyzer over HTTP.
        package var analyzerPlain: Int?
        /// TCP replay listeners: recorded port → listening port.
        package var tcp: [Int: Int]
        /// UDP replay listeners: recorded port → listening port.
        package var udp: [Int: Int]
    }

    private let configuration: ReplayServerConfiguration
    /// A seam for tests: faults injected into the setup of TCP connections (none unless a test sets one).
    package let setupFaults = ConnectionSetupFaults()
    /// A seam for tests: holds the TCP listeners' accept loops before their first connection (never held otherwise).
    package let acceptPause = AcceptPause()
    /// A seam for tests: pauses inside the side-channel exchange (none unless a test sets one).
    package let protocolSeams = ProtocolSeams()
    /// The one connection budget of every TCP listener (also lent to the operator dashboard).
    package let connectionLimiter: ConnectionLimiter
    private let ready = ReadyGate()
    /// The shared state of the running server and its ports; `nil` before it is ready and after it stopped.
    private let live = Mutex<(context: ServerContext, ports: ListeningPorts)?>(nil)

    /// Creates a server; nothing is bound until `run()`.
    /// - Throws: `ReplayServerError` `.invalidConfiguration`.
    package init(configuration: ReplayServerConfiguration) throws(ReplayServerError) {
        self.configuration = try configuration.validated()
        self.connectionLimiter = ConnectionLimiter(
            maximum: configuration.connectionBudget(listeners: 0),
            maximumPerAddress: configuration.limits.maximumConnectionsPerAddress)
    }

    /// A Hummingbird server builder for the operator dashboard: its connections draw on the server's connection
    /// budget (the dashboard's share) and get the analyzer's first-byte, request and idle deadlines.
    package func dashboardServerBuilder(logger: Logger) throws -> HTTPServerBuilder {
        let limits = configuration.limits
        return try HTTPConnectionGuard(
            limiter: connectionLimiter, pool: .dashboard, firstByteTimeout: limits.httpFirstByteTimeout,
            requestTimeout: limits.httpRequestTimeout, idleTimeout: limits.httpIdleTimeout, logger: logger
        ).serverBuilder()
    }

    /// Waits until every listener is bound and returns the ports.
    /// - Throws: `ReplayServerError` when `run()` failed before the server was ready.
    package func listeningPorts() async throws -> ListeningPorts {
        try await ready.wait()
    }

    /// Sessions and connections now (zeros, `running == false`, when the server is not running).
    package func status() async -> ReplayServerStatus {
        let limits = configuration.limits
        guard let entry = live.withLock({ $0 }) else {
            return ReplayServerStatus(
                running: false, draining: false, sessions: 0, maximumSessions: limits.maximumSessions, connections: 0,
                maximumConnections: connectionLimiter.maximum, replays: 0, ports: nil)
        }
        let context = entry.context
        return ReplayServerStatus(
            running: true, draining: context.isDraining, sessions: await context.registry.count,
            maximumSessions: limits.maximumSessions, connections: context.limiter.current,
            maximumConnections: context.limiter.maximum, replays: context.catalogue.replays.count,
            ports: entry.ports)
    }

    /// The merge-point probe log of the running server (`nil` before it runs): what `getMeasurements`
    /// `mergePointProbes` and `localize` read.
    var mergePointProbes: MergePointProbeLog? { live.withLock { $0?.context.mergePointProbes } }

    /// Runs the server until cancelled or shut down gracefully.
    /// - Throws: `ReplayServerError` when the replays cannot be loaded or a listener cannot be bound.
    package func run() async throws {
        do {
            try await serve()
        } catch {
            ready.fail(error)
            throw error
        }
    }

    private func serve() async throws {
        let logger = configuration.logger
        let catalogue = try ReplayCatalogue(directory: configuration.replayDirectory, logger: logger)
        let ssl = try Self.sslContext(configuration.tls)
        let analyzerTLS = try Self.tlsConfiguration(configuration.tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let limits = configuration.limits

        // Bind the replay listeners first: the port map names their ports.
        // With a capture interface, libpcap captures each test there; the socket's view is written only without one.
        let pcapDirectory = configuration.capture == nil ? configuration.pcapDirectory : nil
        let pcapMaximumBytes = configuration.pcapMaximumBytes
        let pcapLogger = configuration.logger
        let pcapMetrics = ServerMetrics(registry: configuration.metricsRegistry)
        var tcpListeners: [(recorded: Int, channel: TCPListener)] = []
        var udpListeners: [(recorded: Int, channel: DatagramChannel)] = []
        var sideListeners: [(secure: Bool, channel: TCPListener)] = []
        var ports = ListeningPorts(tcp: [:], udp: [:])
        do {
            for recorded in Set(catalogue.tcpPorts + configuration.extraReplayPorts).sorted() {
                let channel = try await bindTCP(
                    port: listeningPort(recorded), group: group, kind: "TCP replay port \(recorded)"
                ) { channel in
                    // The client's end of stream must not close the socket by itself: the replay handler reads the
                    // final TCP_INFO counters of the connection first, then closes.
                    try channel.syncOptions?.setOption(.allowRemoteHalfClosure, value: true)
                    try channel.pipeline.syncOperations.addHandlers(
                        IdleStateHandler(readTimeout: TimeAmount(limits.replayIdleTimeout)), CloseOnIdleHandler())
                    if let pcap = pcapDirectory {
                        // Opens no file: that waits until the connection is claimed by an admitted session.
                        let capture = PacketCapture(
                            directory: pcap, maximumBytes: pcapMaximumBytes, logger: pcapLogger, metrics: pcapMetrics)
                        try channel.pipeline.syncOperations.addHandler(capture.handler(), position: .first)
                        try channel.pipeline.syncOperations.addHandler(PacketCaptureTag(capture))
                        channel.closeFuture.whenComplete { _ in capture.finish() }
                    }
                }
                tcpListeners.append((recorded, channel))
                ports.tcp[recorded] = channel.channel.localAddress?.port ?? 0
            }
            for recorded in catalogue.udpPorts {
                let channel = try await bindUDP(port: listeningPort(recorded), group: group)
                udpListeners.append((recorded, channel))
                ports.udp[recorded] = channel.channel.localAddress?.port ?? 0
            }
            for (port, secure) in [
                (configuration.sideChannelTLSPort, true), (configuration.sideChannelPlainPort, false),
            ] {
                guard let port else { continue }
                let context = secure ? ssl : nil
                let channel = try await bindTCP(
                    port: port, group: group, kind: secure ? "TLS side channel" : "side channel"
                ) {
                    channel in
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    }
                    try channel.pipeline.syncOperations.addHandlers(
                        IdleStateHandler(readTimeout: TimeAmount(limits.sideChannelIdleTimeout)), CloseOnIdleHandler())
                }
                sideListeners.append((secure, channel))
                if secure {
                    ports.sideChannelTLS = channel.channel.localAddress?.port
                } else {
                    ports.sideChannelPlain = channel.channel.localAddress?.port
                }
            }
        } catch {
            // Channels that were bound must be closed through their async wrappers before they go away.
            await Self.closeUnused(
                tcpListeners.map(\.channel) + sideListeners.map(\.channel), udpListeners.map(\.channel))
            throw error
        }
        let tcpMap = ports.tcp
        let udpMap = ports.udp
        let portMap = catalogue.portMap(tcpPort: { tcpMap[$0] }, udpPort: { udpMap[$0] })
        let captures = Self.interfaceCaptures(configuration, listening: (tcpMap, udpMap), logger: logger)
        let clientTraces = configuration.clientTraces.map {
            ClientTraceStore(policy: $0, catalogue: catalogue, tcpPorts: tcpMap, udpPorts: udpMap)
        }
        let context = ServerContext(
            configuration: configuration, catalogue: catalogue, portMapBody: portMap.body, limiter: connectionLimiter,
            seams: protocolSeams, captures: captures, clientTraces: clientTraces)
        let openFiles = configuration.openFileLimit()
        let shares = ConnectionLimiter.Pool.allCases.map { "\($0.rawValue) \(connectionLimiter.share($0))" }
        logger.notice(
            "connection budget",
            metadata: [
                "wehe.open_file_limit": "\(openFiles.map(String.init) ?? "unlimited")",
                "wehe.connections.budget": "\(connectionLimiter.maximum)",
                "wehe.connections.configured": "\(limits.maximumConnections)",
                "wehe.connections.shares": "\(shares.joined(separator: ", "))",
            ])
        if connectionLimiter.maximum < limits.maximumConnections {
            logger.warning(
                "the open-file limit lowers the connection budget; raise it (ulimit -n) to serve more connections",
                metadata: [
                    "wehe.open_file_limit": "\(openFiles ?? 0)",
                    "wehe.connections.budget": "\(connectionLimiter.maximum)",
                ])
        }
        let api = AnalyzerAPI(context: context)

        let analyzerPorts = AnalyzerPorts(
            expected: (configuration.analyzerTLSPort == nil ? 0 : 1) + (configuration.analyzerPlainPort == nil ? 0 : 1))
        var apps: [(any Service, Int)] = []
        for (port, secure) in [(configuration.analyzerTLSPort, true), (configuration.analyzerPlainPort, false)] {
            guard let port else { continue }
            let router = AnalyzerHTTP.router(
                api: api, metrics: configuration.metricsRegistry, fleet: configuration.fleetAuthenticator,
                now: configuration.now)
            let server: HTTPServerBuilder
            var guardLogger = logger
            guardLogger[metadataKey: "wehe.channel"] = "\(secure ? "analyzer-tls" : "analyzer")"
            let bounds = HTTPConnectionGuard(
                limiter: connectionLimiter, pool: .analyzer, firstByteTimeout: limits.httpFirstByteTimeout,
                requestTimeout: limits.httpRequestTimeout, idleTimeout: limits.httpIdleTimeout, logger: guardLogger)
            if secure, let tlsConfiguration = analyzerTLS {
                do {
                    server = try bounds.serverBuilder(tls: tlsConfiguration)
                } catch {
                    await Self.closeUnused(
                        tcpListeners.map(\.channel) + sideListeners.map(\.channel), udpListeners.map(\.channel))
                    throw ReplayServerError(.certificate, "cannot set up TLS for the analyzer", underlying: error)
                }
            } else {
                server = try bounds.serverBuilder()
            }
            var appLogger = logger
            appLogger[metadataKey: "wehe.channel"] = "\(secure ? "analyzer-tls" : "analyzer")"
            apps.append(
                (
                    Application(
                        router: router,
                        server: server,
                        configuration: ApplicationConfiguration(
                            address: .hostname(configuration.bindAddress, port: port)),
                        onServerRunning: { channel in
                            await analyzerPorts.report(secure: secure, port: channel.localAddress?.port ?? 0)
                        },
                        logger: appLogger
                    ), port
                ))
        }

        logger.info(
            "replay server listening",
            metadata: [
                "wehe.replays": "\(catalogue.replays.count)", "wehe.tcp.ports": "\(ports.tcp.count)",
                "wehe.udp.ports": "\(ports.udp.count)",
                "wehe.side.tls": "\(ports.sideChannelTLS.map(String.init) ?? "off")",
                "wehe.side.plain": "\(ports.sideChannelPlain.map(String.init) ?? "off")",
                // The limits in force (the connection budget under the open-file limit is logged
                // with it).
                "wehe.sessions.maximum": "\(configuration.limits.maximumSessions)",
                "wehe.connections.maximum": "\(configuration.limits.maximumConnections)",
                "wehe.connections.per_address": "\(configuration.limits.maximumConnectionsPerAddress)",
            ]
        )

        let (shutdownSignal, shutdownContinuation) = AsyncStream.makeStream(of: Void.self)
        let readyPorts = ports
        let sideChannels = sideListeners.map(\.channel.channel) as [any Channel]
        let sideAccepts = sideListeners
        let tcpAccepts = tcpListeners
        let udpChannels = udpListeners
        // The analyzer runs outside the graceful shutdown of this task: it keeps answering through the drain
        // (`/healthz` says draining, running tests fetch their results) and stops once the drain is over.
        let analyzerGroup = ServiceGroup(
            configuration: .init(
                services: apps.map { entry in
                    ServiceGroupConfiguration.ServiceConfiguration(
                        service: AnalyzerListener(
                            app: entry.0, port: entry.1, bindAddress: configuration.bindAddress, ports: analyzerPorts))
                }, logger: logger))
        do {
            try await withGracefulShutdownHandler {
                try await withThrowingDiscardingTaskGroup { tasks in
                    for listener in tcpAccepts {
                        tasks.addTask {
                            // Evictable until matched to a session: connections that never send a replay's
                            // request (idle, or from an address without a session) cannot keep real replays out.
                            await acceptLoop(
                                listener.channel, kind: "tcp-replay", pool: .replay, evictable: true,
                                context: context, pause: self.acceptPause
                            ) { child, established in
                                await TCPReplayHandler(context: context, channel: child, claimed: established).run()
                            }
                        }
                    }
                    for listener in sideAccepts {
                        tasks.addTask {
                            await acceptLoop(
                                listener.channel, kind: "side", pool: .side, evictable: true, context: context,
                                pause: self.acceptPause
                            ) { child, established in
                                await SideChannelHandler(
                                    context: context, channel: child, secure: listener.secure, declared: established
                                ).run()
                            }
                        }
                    }
                    for listener in udpChannels {
                        tasks.addTask {
                            do {
                                try await UDPReplayListener(
                                    context: context, channel: listener.channel, recordedPort: listener.recorded
                                ).run()
                            } catch is CancellationError {
                                logger.debug("UDP listener stopped")
                            } catch {
                                logger.error("UDP listener stopped", metadata: ["wehe.error": "\(error)"])
                            }
                        }
                    }
                    tasks.addTask {
                        // Detached: a child task would inherit this task's graceful shutdown.
                        let analyzer = Task.detached { try await analyzerGroup.run() }
                        try await withTaskCancellationHandler {
                            try await analyzer.value
                        } onCancel: {
                            analyzer.cancel()
                        }
                    }
                    tasks.addTask {
                        let analyzer = try await analyzerPorts.wait()
                        var final = readyPorts
                        final.analyzerTLS = analyzer.tls
                        final.analyzerPlain = analyzer.plain
                        self.live.withLock { $0 = (context, final) }
                        self.ready.open(final)
                    }
                    tasks.addTask {
                        var signals = shutdownSignal.makeAsyncIterator()
                        guard await signals.next() != nil else { return }
                        try await self.drain(
                            context: context, sideListeners: sideChannels, logger: logger)
                        await analyzerGroup.triggerGracefulShutdown()
                        throw ShutdownComplete()
                    }
                }
            } onGracefulShutdown: {
                shutdownContinuation.yield()
            }
        } catch is ShutdownComplete {
            await captures?.finishAll()
            logger.info("replay server stopped")
        } catch {
            await captures?.finishAll()
            live.withLock { $0 = nil }
            shutdownContinuation.finish()
            throw error
        }
        live.withLock { $0 = nil }
        shutdownContinuation.finish()
    }

    /// The captures on the configured interface, with a log line saying whether they can run (the server serves
    /// tests either way); `nil` without a capture interface or a pcap directory.
    private static func interfaceCaptures(
        _ configuration: ReplayServerConfiguration, listening: (tcp: [Int: Int], udp: [Int: Int]), logger: Logger
    ) -> InterfaceCaptures? {
        guard let settings = configuration.capture, let directory = configuration.pcapDirectory else { return nil }
        let captures = InterfaceCaptures(
            settings: settings, directory: directory, logger: logger,
            metrics: ServerMetrics(registry: configuration.metricsRegistry), listening: listening)
        let metadata: Logger.Metadata = [
            "wehe.interface": "\(settings.interface)", "wehe.pcap": "\(directory)",
            "wehe.snap_length": "\(settings.snapLength)",
        ]
        if let reason = captures.availability() {
            logger.warning(
                "packet capture unavailable: tests run without their pcap",
                metadata: metadata.merging(["wehe.reason": "\(reason)"]) { $1 })
        } else {
            logger.notice("capturing each test's packets", metadata: metadata)
        }
        return captures
    }

    /// How long the analyzer keeps answering during the drain after the last session ended and the last `/Results`
    /// request arrived (within the grace period): a client polls for its result every 4 s at most after its replay.
    package static let drainQuietPeriod: Duration = .seconds(10)

    /// Stops admitting, waits for running sessions up to the grace period, then cuts the rest with a reason. The
    /// analyzer answers throughout (`/healthz` with 503 `draining`), and the drain lasts until no session has run
    /// and no `/Results` request has arrived for `drainQuietPeriod`, or the grace period ends.
    private func drain(context: ServerContext, sideListeners: [any Channel], logger: Logger) async throws {
        context.beginDraining()
        for channel in sideListeners { try? await channel.close() }
        let start = ContinuousClock.now
        let deadline = start + configuration.limits.shutdownGracePeriod
        let running = await context.registry.count
        logger.notice("shutting down: waiting for running sessions", metadata: ["wehe.sessions": "\(running)"])
        var lastBusy: ContinuousClock.Instant? = running > 0 ? start : nil
        while ContinuousClock.now < deadline {
            let now = ContinuousClock.now
            if await context.registry.count > 0 {
                lastBusy = now
            } else {
                let latest = [lastBusy, context.lastResultsRequest].compactMap { $0 }.max()
                if latest.map({ $0.duration(to: now) >= Self.drainQuietPeriod }) ?? true { break }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let left = await context.registry.count
        if left > 0 {
            logger.notice("shutting down: cutting sessions", metadata: ["wehe.sessions": "\(left)"])
            await context.registry.terminateAll(reason: "cut by server shutdown after the grace period")
            let cutDeadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < cutDeadline {
                if await context.registry.count == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private struct ShutdownComplete: Error {}

    /// One analyzer listener (HTTP or HTTPS) as a service of the analyzer's own service group.
    private struct AnalyzerListener: Service {
        let app: any Service
        let port: Int
        let bindAddress: String
        let ports: AnalyzerPorts

        func run() async throws {
            do {
                try await app.run()
            } catch {
                // Failing before listening: the port is taken or the address is not ours.
                guard await ports.complete else {
                    throw ReplayServerError(
                        .bindFailed, "cannot listen on \(bindAddress):\(port) (analyzer)", underlying: error)
                }
                throw error
            }
        }
    }

    /// Closes bound listeners that will not be served (startup failed) through their async wrappers.
    private static func closeUnused(_ accepts: [TCPListener], _ datagrams: [DatagramChannel]) async {
        for listener in accepts { try? await listener.accepts.executeThenClose { _ in } }
        for channel in datagrams { try? await channel.executeThenClose { _, _ in } }
    }

    // MARK: listeners

    /// A listening socket's stream of accepted connections. They come out as plain channels, set up and reading into
    /// an `EarlyReadBuffer`, and are wrapped for async use only once an accept loop has taken them: a connection
    /// still queued in the stream when the server stops owns no async writer, whose release unfinished would be a
    /// fatal error in NIO ("Deinited NIOAsyncWriter without calling finish()").
    typealias AcceptChannel = NIOAsyncChannel<any Channel, Never>

    /// A bound TCP listener: its accept stream, the connections set up but not yet taken from it, and its log of
    /// connections whose setup failed.
    struct TCPListener: Sendable {
        let accepts: AcceptChannel
        let queued: QueuedConnections
        let failures: ConnectionSetupFailureLog
        /// The listening socket.
        var channel: any Channel { accepts.channel }
    }
    typealias DatagramChannel = NIOAsyncChannel<AddressedEnvelope<ByteBuffer>, AddressedEnvelope<ByteBuffer>>

    private func listeningPort(_ recorded: Int) -> Int {
        switch configuration.replayPorts {
        case .ephemeral: 0
        case .recorded(let offset): ReplayCatalogue.movedPort(recorded, offset: offset)
        }
    }

    private func bindTCP(
        port: Int,
        group: MultiThreadedEventLoopGroup,
        kind: String,
        setup: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> TCPListener {
        let logger = configuration.logger
        let failures = ConnectionSetupFailureLog(
            kind: kind, logger: logger, metrics: ServerMetrics(registry: configuration.metricsRegistry))
        let faults = setupFaults
        let queued = QueuedConnections()
        let listener: AcceptChannel
        do {
            listener = try await ServerBootstrap(group: group)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptFailureLogger(kind: kind, logger: logger))
                    }
                }
                .serverChannelOption(.backlog, value: 4096)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(
                    .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 65536)
                )
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 * 1024, high: 256 * 1024))
                // Run by NIO's accept handler with the child options above; nothing of ours to do there but the
                // test seam. Its failures (and the options') reach the absorber added below.
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try faults.check(.accepted) }
                }
                .bind(host: configuration.bindAddress, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        do {
                            try faults.check(.pipeline)
                            // Set here, not as a child channel option: a socket option the system refuses for one
                            // connection (seen: EACCES for an unprivileged server in a sandbox) must not fail its
                            // setup. Without it the connection still works.
                            _ = try? channel.syncOptions?.setOption(.socketOption(.tcp_nodelay), value: 1)
                            try setup(channel)
                            try channel.pipeline.syncOperations.addHandler(EarlyReadBuffer())
                            queued.add(channel)
                            return channel
                        } catch {
                            // NIO drops a connection whose initializer failed without closing its socket (never
                            // registered, it would stay open): close it here; the listener goes on.
                            channel.close(promise: nil)
                            failures.record(error, stage: .pipeline)
                            throw error
                        }
                    }
                }
        } catch {
            throw ReplayServerError(
                .bindFailed, "cannot listen on \(configuration.bindAddress):\(port) (\(kind))", underlying: error)
        }
        // A per-connection error that NIO's accept handler reports down the listening socket's pipeline would end
        // the accept stream (the whole listener, for good): it stops right after the accept handler. (Added once the
        // socket is bound, before its port is announced.)
        do {
            try await listener.channel.eventLoop.submit {
                let pipeline = listener.channel.pipeline.syncOperations
                try pipeline.addHandler(
                    ConnectionSetupErrorAbsorber(failures: failures),
                    position: .after(try pipeline.context(name: "AcceptHandler").handler))
            }.get()
        } catch {
            await Self.closeUnused([TCPListener(accepts: listener, queued: queued, failures: failures)], [])
            throw ReplayServerError(
                .bindFailed, "cannot set up the listener on \(configuration.bindAddress):\(port) (\(kind))",
                underlying: error)
        }
        return TCPListener(accepts: listener, queued: queued, failures: failures)
    }

    private func bindUDP(port: Int, group: MultiThreadedEventLoopGroup) async throws -> DatagramChannel {
        do {
            return try await DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 9216))
                .bind(host: configuration.bindAddress, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try DatagramChannel(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ReplayServerError(
                .bindFailed, "cannot listen on UDP \(configuration.bindAddress):\(port)", underlying: error)
        }
    }

    static func tlsConfiguration(_ files: ReplayServerConfiguration.TLSFiles?) throws -> TLSConfiguration? {
        guard let files else { return nil }
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(files.certificateChainPath)
            let key = try NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            tls.minimumTLSVersion = .tlsv12
            // TLS 1.2 only with forward secrecy and authenticated encryption; TLS 1.3's suites are all AEAD.
            tls.cipherSuiteValues = [
                .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            ]
            return tls
        } catch {
            throw ReplayServerError(
                .certificate,
                "cannot read the TLS certificate \(files.certificateChainPath) or key \(files.privateKeyPath)",
                underlying: error
            )
        }
    }

    static func sslContext(_ files: ReplayServerConfiguration.TLSFiles?) throws -> NIOSSLContext? {
        guard let tls = try tlsConfiguration(files) else { return nil }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw ReplayServerError(
                .certificate, "the TLS certificate and key do not form a usable identity", underlying: error)
        }
    }
}

/// Accepts connections until the listener closes; one child task per connection. Each connection takes a slot of
/// the pool's share of the connection budget or is closed at once with a log line. With `evictable`, a connection
/// holds its slot only loosely until its handler calls the `established` closure it is given (the side channel: once
/// its declaration is complete): when the share is full, the oldest such connection is closed for a newcomer, so
/// idle and trickling connections cannot keep real clients out; established ones are never evicted.
///
/// A connection is wrapped for async use in its own task, just before its handler runs (which always finishes the
/// wrapper); when the loop ends (the listener closed, or the server stopped), the connections still queued in the
/// accept stream are closed as plain channels.
private func acceptLoop(
    _ listener: ReplayServer.TCPListener,
    kind: String,
    pool: ConnectionLimiter.Pool,
    evictable: Bool = false,
    context: ServerContext,
    pause: AcceptPause,
    handler:
        @escaping @Sendable (NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ established: @escaping @Sendable () -> Void)
        async -> Void
) async {
    let queued = listener.queued
    let failures = listener.failures
    do {
        try await withThrowingDiscardingTaskGroup { group in
            defer { queued.closeAll() }
            try await listener.accepts.executeThenClose { inbound in
                await pause.wait()
                for try await child in inbound {
                    queued.take(child)
                    let address = AddressText.normalized(child.remoteAddress?.ipAddress ?? "unknown")
                    let ticket = context.limiter.admit(address: address, pool: pool) {
                        context.metrics.connectionFailed(kind, reason: "evicted")
                        child.close(promise: nil)
                    }
                    guard let ticket else {
                        context.metrics.connectionRejected(kind)
                        context.logger.notice(
                            "connection refused: connection limit reached",
                            metadata: [
                                "wehe.channel": "\(kind)", "wehe.peer": "\(AddressText.redacted(address))",
                                "wehe.open": "\(context.limiter.current)",
                            ])
                        child.close(promise: nil)
                        continue
                    }
                    if !evictable { context.limiter.established(ticket) }
                    context.metrics.connectionAccepted(kind)
                    group.addTask {
                        defer { context.limiter.release(ticket) }
                        guard let wrapped = await wrapAccepted(child, failures: failures) else { return }
                        await handler(wrapped) { context.limiter.established(ticket) }
                    }
                }
            }
        }
    } catch is CancellationError {
        context.logger.debug("listener stopped", metadata: ["wehe.channel": "\(kind)"])
    } catch {
        context.logger.error("listener stopped", metadata: ["wehe.channel": "\(kind)", "wehe.error": "\(error)"])
    }
}

/// Wraps an accepted connection for async use on its event loop and hands it what its `EarlyReadBuffer` kept; `nil`,
/// with the connection closed, when the server is stopping (the task is cancelled), the connection is already closed
/// or cannot be wrapped (a failed setup, logged and counted). The wrapper returned must be finished
/// (`executeThenClose`): the handlers always do.
private func wrapAccepted(
    _ channel: any Channel, failures: ConnectionSetupFailureLog
) async -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? {
    guard !Task.isCancelled else {
        channel.close(promise: nil)
        return nil
    }
    do {
        return try await channel.eventLoop.submit {
            // Throws for a connection closed while queued (evicted, idle deadline, the client left).
            let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                wrappingChannelSynchronously: channel,
                configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 4)))
            // From here the wrapper exists and is returned whatever happens: its handler finishes it.
            do {
                try channel.removeEarlyReadBuffer()
            } catch let error as ChannelError where error == .ioOnClosedChannel {
                // Closed already (its handlers are not yet removed, so the wrapper could be added): the handler
                // sees the end at once.
            } catch {
                failures.record(error, stage: .pipeline)
                channel.close(promise: nil)
            }
            return wrapped
        }.get()
    } catch {
        channel.close(promise: nil)
        if let error = error as? ChannelError, error == .ioOnClosedChannel { return nil }
        failures.record(error, stage: .pipeline)
        return nil
    }
}

/// The connections a TCP listener has set up that its accept loop has not taken yet (plain channels).
/// When the loop ends they are closed, and so is any set up after that.
final class QueuedConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var closed = false
    }
    private let state = Mutex(State())

    /// A connection set up by the listener (on its event loop); forgotten once it closes.
    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let closed = state.withLock { state in
            if !state.closed { state.channels[id] = channel }
            return state.closed
        }
        if closed {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.channels.removeValue(forKey: id) } }
    }

    /// The accept loop took the connection: it is the loop's to close.
    func take(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { _ = $0.channels.removeValue(forKey: id) }
    }

    /// Closes the connections not taken, and every connection added from now on.
    func closeAll() {
        let left = state.withLock { state in
            state.closed = true
            defer { state.channels.removeAll() }
            return Array(state.channels.values)
        }
        for channel in left { channel.close(promise: nil) }
    }
}

/// Collects the analyzer ports reported by Hummingbird once its listeners run. Waiting is cancellable: when an
/// analyzer cannot listen (its port is taken), the server's task group cancels the wait instead of hanging on it.
private actor AnalyzerPorts {
    private let expected: Int
    private var tls: Int?
    private var plain: Int?
    private var waiters: [Int: CheckedContinuation<(tls: Int?, plain: Int?), any Error>] = [:]
    private var nextWaiter = 0

    init(expected: Int) { self.expected = expected }

    /// Whether every analyzer reported its port.
    var complete: Bool { (tls == nil ? 0 : 1) + (plain == nil ? 0 : 1) >= expected }

    func report(secure: Bool, port: Int) {
        if secure { tls = port } else { plain = port }
        guard complete else { return }
        for waiter in waiters.values { waiter.resume(returning: (tls, plain)) }
        waiters.removeAll()
    }

    /// The ports once every analyzer listens.
    /// - Throws: `CancellationError` when the waiting task is cancelled first.
    func wait() async throws -> (tls: Int?, plain: Int?) {
        if complete { return (tls, plain) }
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    private func cancel(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}

/// Opens once with the listening ports (or fails with the startup error); waiters resume then.
private final class ReadyGate: Sendable {
    private enum State {
        case waiting([CheckedContinuation<ReplayServer.ListeningPorts, any Error>])
        case ready(ReplayServer.ListeningPorts)
        case failed(any Error)
    }
    private let state = Mutex(State.waiting([]))

    func open(_ ports: ReplayServer.ListeningPorts) { finish(.success(ports)) }

    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ result: Result<ReplayServer.ListeningPorts, any Error>) {
        let waiters: [CheckedContinuation<ReplayServer.ListeningPorts, any Error>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            switch result {
            case .success(let ports): state = .ready(ports)
            case .failure(let error): state = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    func wait() async throws -> ReplayServer.ListeningPorts {
        try await withCheckedThrowingContinuation { continuation in
            let immediate: Result<ReplayServer.ListeningPorts, any Error>? = state.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .ready(let ports): return .success(ports)
                case .failed(let error): return .failure(error)
                }
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }
}

/// On a listening socket: logs failed accepts (out of file descriptors, out of memory), at most once a second with
/// the count since the last line; NIO's accept backoff, after this handler, then pauses accepting briefly.
private final class AcceptFailureLogger: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let kind: String
    let logger: Logger
    private var lastLog: NIODeadline?
    private var suppressed = 0

    init(kind: String, logger: Logger) {
        self.kind = kind
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let now = NIODeadline.now()
        if let lastLog, now - lastLog < .seconds(1) {
            suppressed += 1
        } else {
            logger.warning(
                "accept failed",
                metadata: [
                    "wehe.channel": "\(kind)", "wehe.error": "\(error)",
                    "wehe.failures.since_last": "\(suppressed + 1)",
                ])
            lastLog = now
            suppressed = 0
        }
        context.fireErrorCaught(error)
    }
}
