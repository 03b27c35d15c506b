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

    let configuration: ReplayServerConfiguration
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
        let analyses = context.analysis.scheduler.limits
        logger.notice(
            "analysis slots",
            metadata: [
                "wehe.analyses.running": "\(analyses.running)", "wehe.analyses.per_network": "\(analyses.perNetwork)",
                "wehe.analyses.waiting": "\(analyses.waiting)",
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
        // Finished when the analyzer has stopped: the drain waits for it (bounded) before ending the task group,
        // whose cancellation would otherwise cut the analyzer's graceful shutdown short (HummingbirdCore logs that
        // as errors, on every stop of a service manager).
        let (analyzerStopped, analyzerStoppedContinuation) = AsyncStream.makeStream(of: Void.self)
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
                        defer { analyzerStoppedContinuation.finish() }
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
                        await Self.waitForEnd(of: analyzerStopped, atMost: Self.analyzerStopLimit)
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

    /// How long a stop waits for the analyzer's graceful shutdown (its requests have deadlines of their own) before
    /// cancelling it.
    static let analyzerStopLimit: Duration = .seconds(5)

    /// Returns when `stream` finishes, or after `limit`.
    private static func waitForEnd(of stream: AsyncStream<Void>, atMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stream {} }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
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
}
