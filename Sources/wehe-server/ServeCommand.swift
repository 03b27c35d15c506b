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

    @Option(name: .long, help: "JSON configuration file (keys as the long option names, in camelCase).")
    var config: String?

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

    @OptionGroup(title: "Listeners")
    var listeners: ListenerOptions

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @OptionGroup(title: "Fleet and WeHeY localization")
    var fleet: FleetOptions

    @OptionGroup(title: "Archive and pcaps")
    var archive: ArchiveOptions

    @OptionGroup(title: "Packet capture on an interface")
    var capture: CaptureOptions

    @OptionGroup(title: "Measurements beside the replay")
    var probes: ProbeOptions

    @OptionGroup(title: "Operator dashboard")
    var dashboard: DashboardOptions

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
        listeners.apply(to: &configuration, file: file)
        if let name = admission ?? file.admission {
            guard let policy = ReplayServerConfiguration.AdmissionPolicy(rawValue: name) else {
                throw ValidationError("--admission must be per-address or per-user")
            }
            configuration.admission = policy
        }
        try limits.apply(to: &configuration, file: file)
        configuration.serverName = serverName ?? file.serverName ?? ProcessInfo.processInfo.hostName
        configuration.asTable = try asn.table(logger: logger)
        do {
            configuration.trustedProxies = try (trustedProxy + (file.trustedProxy ?? [])).map {
                try LocalizationPair.Prefix($0)
            }
        } catch {
            throw ValidationError((error as? ReplayServerError)?.message ?? "\(error)")
        }
        try fleet.apply(to: &configuration, file: file, dataDirectory: dataDirectory)
        try probes.apply(to: &configuration, file: file)
        configuration.metricsRegistry = registry
        try clientTraces.apply(to: &configuration, configFile: config)
        archive.apply(to: &configuration, file: file, logger: logger)
        try capture.apply(to: &configuration, file: file)
        try listeners.applyTLS(to: &configuration, file: file, dataDirectory: dataDirectory, logger: logger)

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
        if let service = try dashboard.service(
            store: resultStore, server: server, file: file, replayDirectory: replayDirectory, logger: logger)
        {
            services.append(.init(service: service))
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
    var analysisWorkers: Int?
    var analysesPerNetwork: Int?
    var analysisQueue: Int?
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
