import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import WeheCore
import WeheServer
import WeheStore
import WeheWeb
import WeheWire

#if canImport(Glibc)
    import Glibc
    private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#elseif canImport(Darwin)
    import Darwin
    private let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
#endif

/// `wehe-server serve`: runs the replay server until SIGTERM / SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve replays, the side channel and the analyzer API.",
        discussion: """
            Defaults are the published ports: side channel 55556 (TLS) and 55555, analyzer 56566 (HTTPS) and \
            56565 (HTTP, also /metrics), replay listeners on the traces' recorded ports (80, 443, ...). Ports below \
            1024 need privileges; --port-offset N moves every replay listener by N and the port map advertises the \
            moved ports (the published clients follow it). Without --tls-cert/--tls-key a CA and server \
            certificate are created once in <data>/certs. SIGTERM lets running tests finish for the grace period.
            """
    )

    @Option(
        name: .long,
        help: "Replay directory (default: $WEHE_REPLAYS, ./replays, ../shared/replays, /usr/share/wehe/replays).")
    var replays: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Data directory: results.sqlite, certs/ (default: as `db`: $WEHE_SERVER_DATA_DIR, "
                + "$XDG_DATA_HOME/wehe-server, ~/.local/share/wehe-server)."
        )
    )
    var data: String?

    @Option(name: .long, help: "Address to bind every listener to (default: 0.0.0.0).")
    var bind: String?

    @Option(name: .long, help: "JSON configuration file (keys as the long option names, in camelCase).")
    var config: String?

    @Option(name: .long, help: "Move every replay listener by this many ports.")
    var portOffset: Int?

    @Flag(
        name: .long,
        help: "Bind every replay listener to any free port (the port map advertises them; tests, private servers).")
    var ephemeralReplayPorts = false

    @Option(name: .long, help: "Serve the operator dashboard (/operator) on this port (0 = any free port; off).")
    var dashboardPort: PortSetting?

    @Option(name: .long, help: "Address the operator dashboard binds to (default: 127.0.0.1).")
    var dashboardBind: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Host name the operator dashboard answers to besides its bind address, localhost, 127.0.0.1 and ::1 "
                + "(repeatable; other Host headers are refused against DNS rebinding)."
        ))
    var dashboardHost: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "File holding the operator token: the dashboard then asks for it (HTTP Basic password, any user, or "
                + "Authorization: Bearer). Use it whenever --dashboard-bind is not a loopback address."
        ))
    var dashboardTokenFile: String?

    @Option(name: .long, help: "TLS side-channel port (0 = any free port, off = none).")
    var sideChannelPort: PortSetting?

    @Option(name: .long, help: "Plain side-channel port (off = none).")
    var sideChannelPlainPort: PortSetting?

    @Option(name: .long, help: "HTTPS analyzer port (off = none).")
    var analyzerPort: PortSetting?

    @Option(name: .long, help: "HTTP analyzer and /metrics port (off = none).")
    var analyzerPlainPort: PortSetting?

    @Option(name: .long, help: "Server certificate chain (PEM).")
    var tlsCert: String?

    @Option(name: .long, help: "Server private key (PEM).")
    var tlsKey: String?

    @Option(name: .long, help: "Admission rule: per-address (published) or per-user.")
    var admission: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Network (CIDR) of a proxy whose side channels may declare the client's real address (repeatable); from "
                + "anyone else the declared address is ignored."
        ))
    var trustedProxy: [String] = []

    @Option(name: .long, help: "Name recorded with every test.")
    var serverName: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "WeHeY server pair for getServers: '[prefix=]address1,address2,label' (repeatable). Clients in the "
                + "longest matching CIDR prefix (IPv4 or IPv6) get its pairs; pairs without a prefix are the default."
        ))
    var localizationPair: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "WeHeY M-Lab site pair for getServers' server-site-pairs: '[prefix=]site1,site2,label' (repeatable; "
                + "clients of the fleet locate each site). Matched like --localization-pair; a site never makes a "
                + "server askable by localize (list the fleet's machines with --fleet-peer)."
        ))
    var localizationSitePair: [String] = []

    @Option(name: .long, help: "CA the other server of a WeHeY pair chains to (default: <data>/certs/ca.crt).")
    var peerCA: String?

    @Option(name: .long, help: "Analyzer port of the other server of a WeHeY pair (HTTPS).")
    var peerAnalyzerPort: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "File holding the fleet secret (≥ 32 bytes) shared by the servers that fetch each other's WeHeY "
                + "measurements; without it getMeasurements answers nobody."
        ))
    var fleetSecretFile: String?

    @Option(name: .long, help: "Seconds one request to the other server of a WeHeY pair may take (default 8).")
    var peerTimeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Server (address or name) that localize may fetch WeHeY measurements from besides those of "
                + "--localization-pair (repeatable); no other server is ever contacted."
        ))
    var fleetPeer: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Name or address the other fleet servers reach this one by, when it is neither --server-name nor the "
                + "local address (a public address behind NAT; repeatable): signed requests must name it."
        ))
    var fleetHostName: [String] = []

    @Option(name: .long, help: "localize requests allowed per client address, and per user id, a minute (default 6).")
    var localizePerMinute: Int?

    @Option(name: .long, help: "localize requests allowed per client /24 or /64 and minute (default 12).")
    var localizePerNetworkPerMinute: Int?

    @Option(
        name: .long,
        help: "Signed requests this server sends to each fleet peer a minute (default 60; each costs the peer a nonce)."
    )
    var peerRequestsPerMinute: Int?

    @Option(name: .long, help: "Milliseconds between TCP_INFO readings of a replay connection (default 10, 0 = off).")
    var lossSamplingMs: Int?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Probe every original TCP replay for WeHeY's blind spot (a per-flow throttler on the shared segment; "
                + "Docs/server.md): in-flow copies and UDP probes to the replay's client, one pair per 1.05 s. Linux, "
                + "CAP_NET_RAW; needs --merge-point-ttl. Off by default."
        ))
    var mergePointProbe = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hops from this server to the merge point of its localization pair (the first router the two servers' "
                + "traceroutes to the client share), for --merge-point-probe."
        ))
    var mergePointTTL: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also write the reference server's per-test files (M-Lab spool: replay/, replayInfo1/, clientXputs1/, "
                + "decisions1/, localizeDecisions1/, datatypes/) into this directory (default: $WEHE_ARCHIVE; off)."
        ))
    var archive: String?

    @Option(name: .long, help: "Prefix of the archive's measurementUUID (M-Lab's uuid prefix; default wehe).")
    var archiveUUIDPrefix: String?

    @Option(
        name: .long,
        help:
            "Write the server side of each TCP replay connection as a pcap below this directory (no root needed; off)."
    )
    var pcap: String?

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @OptionGroup(title: "Packet capture on an interface")
    var capture: CaptureOptions

    @OptionGroup(title: "Recorded tests clients bring")
    var clientTraces: ClientTraceOptions

    @OptionGroup(title: "Result store")
    var results: ResultStoreOptions

    @OptionGroup(title: "Logging")
    var logging: LoggingOptions

    @OptionGroup(title: "Provider (AS) of each test")
    var asn: ASNOptions

    func run() async throws {
        Self.raiseOpenFileLimit()
        let file = try FileSettings.load(config)
        logging.bootstrap(file: file)
        let registry = PrometheusCollectorRegistry()
        // Every metric with its HELP text (and the lateness histograms' buckets): ServerMetrics' table.
        MetricsSystem.bootstrap(PrometheusHelpFactory(registry: registry))
        let logger = Logger(label: "wehe-server")

        let dataDirectory = data ?? Self.defaultDataDirectory()
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        guard let replayDirectory = replays ?? file.replays ?? Self.defaultReplayDirectory() else {
            Self.printError("wehe-server: no replay directory (give --replays <dir> or set WEHE_REPLAYS)")
            throw ExitCode(1)
        }
        let resultStore = try await StoreFactory.open(
            kind: results.store ?? file.store ?? "sqlite", dataDirectory: dataDirectory,
            postgresURL: results.postgresURL ?? file.postgresURL, logger: logger)
        // A configuration error found from here on closes the store before it is reported (an open SQLite
        // connection must not be dropped unclosed).
        do {
            try await serve(
                store: resultStore, file: file, dataDirectory: dataDirectory, replayDirectory: replayDirectory,
                registry: registry, logger: logger)
        } catch {
            await resultStore.close()
            throw error
        }
    }

    /// Configures and runs the server over an open store; closes the store when the server stops.
    private func serve(
        store resultStore: any ResultStore, file: FileSettings, dataDirectory: String, replayDirectory: String,
        registry: PrometheusCollectorRegistry, logger: Logger
    ) async throws {
        var configuration = ReplayServerConfiguration(
            replayDirectory: replayDirectory, store: resultStore, logger: logger)
        configuration.dataDirectory = dataDirectory
        configuration.bindAddress = bind ?? file.bind ?? "0.0.0.0"
        configuration.replayPorts =
            ephemeralReplayPorts || file.ephemeralReplayPorts == true
            ? .ephemeral : .recorded(offset: portOffset ?? file.portOffset ?? 0)
        configuration.sideChannelTLSPort = Self.port(sideChannelPort, file.sideChannelPort, default: 55556)
        configuration.sideChannelPlainPort = Self.port(sideChannelPlainPort, file.sideChannelPlainPort, default: 55555)
        configuration.analyzerTLSPort = Self.port(analyzerPort, file.analyzerPort, default: 56566)
        configuration.analyzerPlainPort = Self.port(analyzerPlainPort, file.analyzerPlainPort, default: 56565)
        if let name = admission ?? file.admission {
            guard let policy = ReplayServerConfiguration.AdmissionPolicy(rawValue: name) else {
                throw ValidationError("--admission must be per-address or per-user")
            }
            configuration.admission = policy
        }
        try limits.apply(to: &configuration, file: file)
        if let value = localizePerMinute ?? file.localizePerMinute { configuration.localizeRequestsPerMinute = value }
        if let value = localizePerNetworkPerMinute ?? file.localizePerNetworkPerMinute {
            configuration.localizeRequestsPerNetworkPerMinute = value
        }
        if let value = peerRequestsPerMinute ?? file.peerRequestsPerMinute {
            configuration.peerRequestsPerMinute = value
        }
        configuration.fleetPeers = fleetPeer + (file.fleetPeer ?? [])
        configuration.fleetHostNames = fleetHostName + (file.fleetHostName ?? [])
        configuration.serverName = serverName ?? file.serverName ?? ProcessInfo.processInfo.hostName
        configuration.asTable = try asn.table(logger: logger)
        do {
            configuration.localizationServerPairs = try (localizationPair + (file.localizationPair ?? [])).map {
                try LocalizationPair(parsing: $0)
            }
            configuration.localizationSitePairs = try (localizationSitePair + (file.localizationSitePair ?? [])).map {
                try LocalizationPair(parsingSites: $0)
            }
            if let path = fleetSecretFile ?? file.fleetSecretFile {
                configuration.fleetAuthenticator = try FleetAuthenticator.load(secretFile: path)
            }
            configuration.trustedProxies = try (trustedProxy + (file.trustedProxy ?? [])).map {
                try LocalizationPair.Prefix($0)
            }
        } catch {
            throw ValidationError((error as? ReplayServerError)?.message ?? "\(error)")
        }
        if let seconds = peerTimeout ?? file.peerTimeout {
            guard seconds.isFinite, seconds > 0, seconds <= 600 else {
                throw ValidationError("--peer-timeout must lie in (0, 600] seconds")
            }
            configuration.peerTimeout = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        if let milliseconds = lossSamplingMs ?? file.lossSamplingMs {
            configuration.lossSamplingPeriod = milliseconds == 0 ? nil : .milliseconds(milliseconds)
        }
        if mergePointProbe {
            guard let ttl = mergePointTTL, (1...64).contains(ttl) else {
                throw ValidationError(
                    "--merge-point-probe needs --merge-point-ttl N (1…64): the merge point's hop count")
            }
            do {
                try MergePointProber.checkPrivileges()
            } catch {
                throw ValidationError(error.message)
            }
            configuration.mergePointProbe = MergePointProbeSettings(mergeTTL: ttl)
        } else if mergePointTTL != nil {
            throw ValidationError("--merge-point-ttl is used only with --merge-point-probe")
        }
        configuration.metricsRegistry = registry
        try clientTraces.apply(to: &configuration, configFile: config)
        if let path = archive ?? file.archive ?? ProcessInfo.processInfo.environment["WEHE_ARCHIVE"], !path.isEmpty {
            configuration.archive = ArchiveWriter(
                directory: path, uuidPrefix: archiveUUIDPrefix ?? file.archiveUUIDPrefix ?? "wehe", logger: logger)
            logger.info("archive: writing the reference server's files", metadata: ["wehe.archive": "\(path)"])
        }
        configuration.pcapDirectory = pcap ?? file.pcap ?? ProcessInfo.processInfo.environment["WEHE_PCAP"]
        try capture.apply(to: &configuration, file: file)
        let ownCA = (dataDirectory as NSString).appendingPathComponent("certs/ca.crt")
        configuration.peerCACertificatePath =
            peerCA ?? file.peerCA ?? (FileManager.default.fileExists(atPath: ownCA) ? ownCA : nil)
        configuration.peerAnalyzerPort = peerAnalyzerPort ?? file.peerAnalyzerPort ?? 56566

        if configuration.sideChannelTLSPort != nil || configuration.analyzerTLSPort != nil {
            let cert = tlsCert ?? file.tlsCert
            let key = tlsKey ?? file.tlsKey
            if let cert, let key {
                configuration.tls = .init(certificateChainPath: cert, privateKeyPath: key)
            } else {
                let directory = (dataDirectory as NSString).appendingPathComponent("certs")
                let serverCertificate = (directory as NSString).appendingPathComponent("server.crt")
                let serverKey = (directory as NSString).appendingPathComponent("server.key")
                if !FileManager.default.fileExists(atPath: serverCertificate) {
                    let output = try CertificateFactory.issue(
                        into: directory, hostNames: ["localhost", "127.0.0.1", "::1", configuration.serverName])
                    logger.notice(
                        "created a CA and server certificate; clients must trust the CA",
                        metadata: ["wehe.ca": "\(output.caCertificate)"])
                }
                configuration.tls = .init(certificateChainPath: serverCertificate, privateKeyPath: serverKey)
            }
        }

        let server: ReplayServer
        do {
            server = try ReplayServer(configuration: configuration)
        } catch {
            Self.printError("wehe-server: \(error)")
            throw ExitCode(2)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: server), .init(service: PortAnnouncer(server: server), successTerminationBehavior: .ignore),
        ]
        if let days = results.retentionDays ?? file.retentionDays {
            guard days >= 1 else { throw ValidationError("--retention-days must be at least 1") }
            services.append(.init(service: RetentionPurger(store: resultStore, days: days, logger: logger)))
        }
        if let listenPort = Self.port(dashboardPort, file.dashboardPort, default: -1), listenPort >= 0 {
            var token: String?
            if let path = dashboardTokenFile ?? file.dashboardTokenFile {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("cannot read the dashboard token file \(path)")
                }
                token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard (token?.count ?? 0) >= 16 else {
                    throw ValidationError("the dashboard token in \(path) must have at least 16 characters")
                }
            }
            let dashboardAddress = dashboardBind ?? file.dashboardBind ?? "127.0.0.1"
            if token == nil, !["127.0.0.1", "::1", "localhost"].contains(dashboardAddress) {
                logger.warning(
                    "the operator dashboard is bound beyond loopback without a login; give --dashboard-token-file",
                    metadata: ["wehe.bind": "\(dashboardAddress)"])
            }
            services.append(
                .init(
                    service: try Self.operatorDashboard(
                        store: resultStore, server: server, bind: dashboardAddress, port: listenPort,
                        hosts: dashboardHost + (file.dashboardHost ?? []), token: token,
                        catalog: try? ReplayLibrary(directory: replayDirectory).catalog(), logger: logger)))
        }
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            logger.critical("server stopped with an error", metadata: ["wehe.error": "\(error)"])
            await resultStore.close()
            Self.printError("wehe-server: \(error)")
            throw ExitCode(1)
        }
        await resultStore.close()
    }

    /// The operator dashboard over the server's store, with the server's health and the WeHeY runs; prints its
    /// address (with the chosen port when `port` is 0) on standard output once listening.
    static func operatorDashboard(
        store: any ResultStore, server: ReplayServer, bind: String, port: Int, hosts: [String] = [],
        token: String? = nil, catalog: AppCatalog? = nil, logger: Logger
    ) throws -> some Service {
        let dashboard: Dashboard
        // Host headers answered (DNS-rebinding guard): the bind address, loopback names, and the configured names.
        let bracketed = bind.contains(":") ? "[\(bind)]" : bind
        let allowed = Set(
            ([bracketed, "localhost", "127.0.0.1", "[::1]"] + hosts.map { $0.contains(":") ? "[\($0)]" : $0 })
                .map { $0.lowercased() })
        do {
            dashboard = try Dashboard(
                configuration: DashboardConfiguration(
                    store: store, catalog: catalog, health: ServerHealth(server: server, startedAt: Date()),
                    localizations: StoreLocalizationListing(store: store), allowedHosts: allowed,
                    operatorToken: token, logger: logger))
        } catch {
            printError("wehe-server: \(error)")
            throw ExitCode(2)
        }
        let router = Router()
        dashboard.addOperatorRoutes(to: router)
        let path = dashboard.configuration.operatorPath
        var dashboardLogger = logger
        dashboardLogger[metadataKey: "wehe.channel"] = "dashboard"
        var guardLogger = logger
        guardLogger[metadataKey: "wehe.channel"] = "dashboard"
        return Application(
            router: router,
            server: try server.dashboardServerBuilder(logger: guardLogger),
            configuration: ApplicationConfiguration(
                address: .hostname(bind, port: port), serverName: "wehe-server-dashboard"),
            onServerRunning: { channel in
                let chosen = channel.localAddress?.port ?? port
                let host = bind.contains(":") ? "[\(bind)]" : bind
                // Unbuffered, so that a script reading a redirected stdout sees the address at once.
                FileHandle.standardOutput.write(
                    Data("wehe-server: operator dashboard http://\(host):\(chosen)\(path)/\n".utf8))
            },
            logger: dashboardLogger)
    }

    /// Every connection is a file descriptor: lift the soft limit to the hard one (the connection cap is the
    /// server's own bound).
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
    }

    /// The option wins over the file (where -1 means off); neither gives the default.
    static func port(_ option: PortSetting?, _ file: Int?, default defaultPort: Int) -> Int? {
        if let option { return option.port }
        guard let file else { return defaultPort }
        return file < 0 ? nil : file
    }

    /// The data directory `wehe-server db` uses by default, so both find the same database.
    static func defaultDataDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment["WEHE_SERVER_DATA_DIR"], !directory.isEmpty { return directory }
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/wehe-server" }
        return FileManager.default.homeDirectoryForCurrentUser.path + "/.local/share/wehe-server"
    }

    static func defaultReplayDirectory() -> String? {
        let candidates =
            [ProcessInfo.processInfo.environment["WEHE_REPLAYS"], "replays", "../shared/replays"]
            + InstalledData.replayDirectories
        return candidates.compactMap { $0 }.first { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// A port option: a number, or `off`.
struct PortSetting: ExpressibleByArgument {
    /// The port; `nil` for off.
    var port: Int?

    init?(argument: String) {
        if argument == "off" || argument == "-1" {
            port = nil
        } else if let value = Int(argument), (0...65535).contains(value) {
            port = value
        } else {
            return nil
        }
    }
}

/// The `--config` file: every key optional, named like the long options in camelCase.
struct FileSettings: Decodable {
    var replays: String?
    var bind: String?
    var portOffset: Int?
    var ephemeralReplayPorts: Bool?
    var dashboardPort: Int?
    var dashboardBind: String?
    var sideChannelPort: Int?
    var sideChannelPlainPort: Int?
    var analyzerPort: Int?
    var analyzerPlainPort: Int?
    var tlsCert: String?
    var tlsKey: String?
    var admission: String?
    var store: String?
    var postgresURL: String?
    var maxConnections: Int?
    var maxConnectionsPerAddress: Int?
    var maxSessions: Int?
    var retentionDays: Int?
    var maxSessionsPerNetwork: Int?
    var storedReplaysPerNetwork: Int?
    var maxSessionsPerSite: Int?
    var trustedProxy: [String]?
    var fleetPeer: [String]?
    var fleetHostName: [String]?
    var localizePerMinute: Int?
    var localizePerNetworkPerMinute: Int?
    var peerRequestsPerMinute: Int?
    var dashboardHost: [String]?
    var dashboardTokenFile: String?
    var gracePeriod: Int?
    var serverName: String?
    var localizationPair: [String]?
    var localizationSitePair: [String]?
    var peerCA: String?
    var peerAnalyzerPort: Int?
    var fleetSecretFile: String?
    var peerTimeout: Double?
    var lossSamplingMs: Int?
    var archive: String?
    var archiveUUIDPrefix: String?
    var pcap: String?
    var pcapMaxBytes: Int?
    var captureInterface: String?
    var captureSnapLength: Int?
    var captureMaxSeconds: Int?
    var captureMaxConcurrent: Int?
    var captureMaxPerNetwork: Int?
    var logLevel: String?
    var logFormat: String?

    static func load(_ path: String?) throws -> FileSettings {
        guard let path else { return FileSettings() }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(FileSettings.self, from: data)
        } catch {
            throw ValidationError("cannot read configuration file \(path): \(error)")
        }
    }
}
