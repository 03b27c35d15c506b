import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import WeheServer
import WeheStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the server keeps its files in M-Lab's Wehe container, and the ports of its probes: the published image's
/// contract (`mlab-deployment.md` §2-3). Every path is a field so that a test can move the whole layout below a
/// temporary root (`rooted(at:)`); the defaults are M-Lab's.
struct MLabLayout: Sendable, Equatable {
    /// Writable; M-Lab's init container copies `ca.crt` and `ca.key` here from a secret, the server writes its
    /// certificate and key for the host name beside them (`server.crt`, `server.key`).
    var sslDirectory = "/wehe/ssl"
    /// Our result database (`results.sqlite`), which the published image does not have: beside the certificates, in
    /// the writable `/wehe`.
    var dataDirectory = "/wehe/data"
    /// The experiment's spool: the tables `<datatype>/YYYY/MM/DD/*.json` jostler loads, and `replay/` (the
    /// per-user files and packet captures) that pusher archives.
    var spoolDirectory = "/var/spool/wehe"
    /// The tables' BigQuery schemas (`<datatype>.json`), which jostler reads at its start.
    var datatypesDirectory = "/var/spool/datatypes"
    /// The file holding M-Lab's UUID prefix, named by `$UUID_PREFIX` (`/var/local/uuid/prefix` on M-Lab); `nil`
    /// when the variable is not set.
    var uuidPrefixFile: String? = ProcessInfo.processInfo.environment["UUID_PREFIX"].flatMap { $0.isEmpty ? nil : $0 }
    /// `/metrics` (Prometheus text) answers on these ports: 9990 is the pod's liveness and startup probe, 9091
    /// the port M-Lab scrapes the analyzer's metrics on.
    var metricsPorts = [9990, 9091]

    /// The same layout with every directory moved below `root` (the prefix file's path as given: the environment
    /// names it).
    func rooted(at root: String) -> MLabLayout {
        guard root != "/", !root.isEmpty else { return self }
        var moved = self
        func below(_ path: String) -> String {
            (root as NSString).appendingPathComponent(String(path.drop { $0 == "/" }))
        }
        moved.sslDirectory = below(sslDirectory)
        moved.dataDirectory = below(dataDirectory)
        moved.spoolDirectory = below(spoolDirectory)
        moved.datatypesDirectory = below(datatypesDirectory)
        return moved
    }

    /// The UUID prefix: the prefix file's first line, trimmed. Without `$UUID_PREFIX`, `wehe`.
    /// - Throws: `MLabLayoutError` when the file cannot be read or holds no usable prefix.
    func uuidPrefix() throws -> String {
        guard let path = uuidPrefixFile else { return "wehe" }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MLabLayoutError(message: "cannot read the UUID prefix file \(path) (named by $UUID_PREFIX)")
        }
        let prefix =
            String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        // M-Lab's prefixes are a host name and a boot time (letters, digits, `.`, `-`, `_`); anything else would
        // break the join key or the JSON that carries it.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard !prefix.isEmpty, prefix.count <= 200, prefix.allSatisfy(allowed.contains) else {
            throw MLabLayoutError(
                message: "the UUID prefix file \(path) must hold one prefix of letters, digits, '.', '-' and '_'")
        }
        return prefix
    }
}

/// A file of the M-Lab layout that cannot be used as it is.
struct MLabLayoutError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// `wehe-server mlab <hostname> <interface>`: the server as M-Lab's Wehe container runs it, a drop-in for the
/// published image (same arguments, paths, ports and probes).
struct MLabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mlab",
        abstract: "Run as M-Lab's Wehe container: the published image's arguments, paths, ports and probes.",
        discussion: """
            Takes the public host name (wehe.$MLAB_NODE_NAME) and the capture interface (net1), as the published \
            image does. Reads the CA from /wehe/ssl/ca.crt and ca.key (M-Lab's init container copies them there) and \
            writes the server certificate for the host name beside it; answers /metrics on 9990 (liveness and \
            startup probes) and 9091; reads the UUID prefix from the file named by $UUID_PREFIX (measurementUUID = \
            <prefix>_<socket cookie as 16 hex digits>); writes the datatype schemas to /var/spool/datatypes and \
            each test's tables to /var/spool/wehe/<datatype>/YYYY/MM/DD/, the per-user files and the packet \
            captures to /var/spool/wehe/replay/. Listens on the published ports: the traces' replay ports, side \
            channel 55556 (TLS) and 55555, analyzer 56566 (HTTPS) and 56565. Docs/mlab.md has the contract.
            """
    )

    @Argument(help: "Public host name of this server (the certificate's name), e.g. wehe.mlab1-lga0t.example.")
    var hostname: String

    @Argument(help: "Network interface the platform's packets arrive on (net1 on M-Lab), where each test is captured.")
    var interface: String

    @Option(
        name: .long,
        help: "Move every path of the layout below this directory (tests; default /, the published paths).")
    var root: String?

    @Option(
        name: .long,
        help: "Replay directory (default: $WEHE_REPLAYS, ./replays, ../shared/replays, /usr/share/wehe/replays).")
    var replays: String?

    @Option(name: .long, help: "Address to bind every listener to (default: 0.0.0.0).")
    var bind: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "JSON configuration file as for `serve`; mlab reads its limit, result store and logging keys (the "
                + "layout's paths and ports are M-Lab's)."
        ))
    var config: String?

    @OptionGroup(title: "Limits")
    var limits: LimitOptions

    @OptionGroup(title: "Packet capture on the interface")
    var capture: CaptureOptions

    @OptionGroup(title: "Result store")
    var results: ResultStoreOptions

    @OptionGroup(title: "Logging")
    var logging: LoggingOptions

    func validate() throws {
        guard !hostname.isEmpty, hostname.count <= 253,
            hostname.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" }),
            hostname.allSatisfy(\.isASCII)
        else {
            throw ValidationError("the host name must be a DNS name or an address")
        }
    }

    func run() async throws {
        ServeCommand.raiseOpenFileLimit()
        let file = try FileSettings.load(config)
        logging.bootstrap(file: file)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusHelpFactory(registry: registry))
        let logger = Logger(label: "wehe-server")
        let layout = MLabLayout().rooted(at: root ?? "/")

        // The published image hands the interface to its packet capture; a name that does not exist is a
        // deployment error, said before anything is bound.
        guard if_nametoindex(interface) != 0 else {
            ServeCommand.printError("wehe-server: no network interface \(interface) (the capture interface)")
            throw ExitCode(2)
        }
        let prefix: String
        do {
            prefix = try layout.uuidPrefix()
        } catch {
            ServeCommand.printError("wehe-server: \(error)")
            throw ExitCode(1)
        }
        let tls = try Self.certificates(layout: layout, hostname: hostname, logger: logger)
        guard let replayDirectory = replays ?? ServeCommand.defaultReplayDirectory() else {
            ServeCommand.printError("wehe-server: no replay directory (give --replays <dir> or set WEHE_REPLAYS)")
            throw ExitCode(1)
        }
        try FileManager.default.createDirectory(atPath: layout.dataDirectory, withIntermediateDirectories: true)
        let resultStore = try await StoreFactory.open(
            kind: results.store ?? file.store ?? "sqlite", dataDirectory: layout.dataDirectory,
            postgresURL: results.postgresURL ?? file.postgresURL, logger: logger)
        do {
            var configuration = ReplayServerConfiguration(
                replayDirectory: replayDirectory, store: resultStore, logger: logger)
            configuration.dataDirectory = layout.dataDirectory
            configuration.bindAddress = bind ?? "0.0.0.0"
            configuration.replayPorts = .recorded(offset: 0)
            configuration.sideChannelTLSPort = 55556
            configuration.sideChannelPlainPort = 55555
            configuration.analyzerTLSPort = 56566
            configuration.analyzerPlainPort = 56565
            configuration.serverName = hostname
            configuration.tls = tls
            configuration.metricsRegistry = registry
            try limits.apply(to: &configuration, file: file)
            configuration.archive = ArchiveWriter(
                directory: layout.spoolDirectory, uuidPrefix: prefix, datatypesDirectory: layout.datatypesDirectory,
                logger: logger)
            configuration.pcapDirectory = layout.spoolDirectory
            try capture.apply(to: &configuration, file: file, interface: interface)
            logger.info(
                "M-Lab mode",
                metadata: [
                    "wehe.host": "\(hostname)", "wehe.interface": "\(interface)", "wehe.uuid.prefix": "\(prefix)",
                    "wehe.spool": "\(layout.spoolDirectory)", "wehe.datatypes": "\(layout.datatypesDirectory)",
                ])
            try await run(
                configuration: configuration, layout: layout,
                retentionDays: results.retentionDays ?? file.retentionDays,
                registry: registry, logger: logger)
        } catch {
            await resultStore.close()
            throw error
        }
        await resultStore.close()
    }

    /// Runs the server, its port announcement and the metrics listeners until SIGTERM or SIGINT.
    private func run(
        configuration: ReplayServerConfiguration, layout: MLabLayout, retentionDays: Int?,
        registry: PrometheusCollectorRegistry, logger: Logger
    ) async throws {
        let server: ReplayServer
        do {
            server = try ReplayServer(configuration: configuration)
        } catch {
            ServeCommand.printError("wehe-server: \(error)")
            throw ExitCode(2)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: server), .init(service: PortAnnouncer(server: server), successTerminationBehavior: .ignore),
        ]
        for port in layout.metricsPorts {
            services.append(
                .init(
                    service: try Self.metricsListener(
                        registry: registry, server: server, bind: configuration.bindAddress, port: port,
                        logger: logger)))
        }
        if let days = retentionDays {
            guard days >= 1 else { throw ValidationError("--retention-days must be at least 1") }
            services.append(.init(service: RetentionPurger(store: configuration.store, days: days, logger: logger)))
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            logger.critical("server stopped with an error", metadata: ["wehe.error": "\(error)"])
            ServeCommand.printError("wehe-server: \(error)")
            throw ExitCode(1)
        }
    }

    /// The CA M-Lab provides, and a server certificate for the host name signed by it (written at every start, so
    /// a renewed CA or a new name takes effect with a restart).
    /// - Throws: `ExitCode(1)` when the CA is missing (a new CA would be one no client trusts) or unusable.
    static func certificates(
        layout: MLabLayout, hostname: String, logger: Logger
    ) throws -> ReplayServerConfiguration.TLSFiles {
        let directory = layout.sslDirectory
        let files = FileManager.default
        for name in ["ca.crt", "ca.key"]
        where !files.fileExists(atPath: (directory as NSString).appendingPathComponent(name)) {
            ServeCommand.printError(
                "wehe-server: no \(name) in \(directory): M-Lab's init container copies the CA there from a secret")
            throw ExitCode(1)
        }
        do {
            // The loopback names let a probe on the machine itself verify the certificate too.
            let output = try CertificateFactory.issue(
                into: directory, hostNames: [hostname, "localhost", "127.0.0.1", "::1"])
            logger.notice(
                "server certificate issued by the provided CA",
                metadata: ["wehe.certificate": "\(output.serverCertificate)", "wehe.host": "\(hostname)"])
            return .init(certificateChainPath: output.serverCertificate, privateKeyPath: output.serverKey)
        } catch {
            ServeCommand.printError("wehe-server: cannot issue the server certificate in \(directory): \(error)")
            throw ExitCode(1)
        }
    }

    /// `GET /metrics` (Prometheus text) on `port`; its connections draw on the server's bounded dashboard share,
    /// with the analyzer's deadlines (M-Lab's firewall opens 9990-9999 to everyone). Prints its port once listening.
    static func metricsListener(
        registry: PrometheusCollectorRegistry, server: ReplayServer, bind: String, port: Int, logger: Logger
    ) throws -> some Service {
        let router = Router()
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        var metricsLogger = logger
        metricsLogger[metadataKey: "wehe.channel"] = "metrics"
        return Application(
            router: router,
            server: try server.dashboardServerBuilder(logger: metricsLogger),
            configuration: ApplicationConfiguration(
                address: .hostname(bind, port: port), serverName: "wehe-server-metrics"),
            onServerRunning: { channel in
                let chosen = channel.localAddress?.port ?? port
                FileHandle.standardOutput.write(Data("wehe-server: metrics port \(chosen) /metrics\n".utf8))
            },
            logger: metricsLogger)
    }
}
