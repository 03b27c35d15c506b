import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import WeheServer
import WeheStore
import WeheWire

// The option groups of `serve`, one per concern, beside those it shares with `mlab` (ServerOptionGroups.swift,
// CaptureOptions.swift). Each option is documented once, here; the configuration file (`FileSettings`) uses the same
// names in camelCase, and the command line wins over the file. Each group applies itself to the server's
// configuration.

/// The listeners: address, ports, TLS identity.
struct ListenerOptions: ParsableArguments {
    @Option(name: .long, help: "Address to bind every listener to (default: 0.0.0.0).")
    var bind: String?

    @Option(name: .long, help: "Move every replay listener by this many ports.")
    var portOffset: Int?

    @Flag(
        name: .long,
        help: "Bind every replay listener to any free port (the port map advertises them; tests, private servers).")
    var ephemeralReplayPorts = false

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

    /// Sets the bind address, the replay ports' placement and the side-channel and analyzer ports; the option wins
    /// over the file, where -1 means off.
    func apply(to configuration: inout ReplayServerConfiguration, file: FileSettings) {
        configuration.bindAddress = bind ?? file.bind ?? "0.0.0.0"
        configuration.replayPorts =
            ephemeralReplayPorts || file.ephemeralReplayPorts == true
            ? .ephemeral : .recorded(offset: portOffset ?? file.portOffset ?? 0)
        configuration.sideChannelTLSPort = ServeCommand.port(sideChannelPort, file.sideChannelPort, default: 55556)
        configuration.sideChannelPlainPort = ServeCommand.port(
            sideChannelPlainPort, file.sideChannelPlainPort, default: 55555)
        configuration.analyzerTLSPort = ServeCommand.port(analyzerPort, file.analyzerPort, default: 56566)
        configuration.analyzerPlainPort = ServeCommand.port(analyzerPlainPort, file.analyzerPlainPort, default: 56565)
    }

    /// Sets the TLS identity when a TLS listener is on: the given certificate and key, else the server's own in
    /// `<data>/certs`, created once (a CA and a server certificate for localhost and the server's name).
    func applyTLS(
        to configuration: inout ReplayServerConfiguration, file: FileSettings, dataDirectory: String, logger: Logger
    ) throws {
        guard configuration.sideChannelTLSPort != nil || configuration.analyzerTLSPort != nil else { return }
        if let cert = tlsCert ?? file.tlsCert, let key = tlsKey ?? file.tlsKey {
            configuration.tls = .init(certificateChainPath: cert, privateKeyPath: key)
            return
        }
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

/// The fleet: WeHeY server pairs, the peers this server fetches measurements from, and their rate limits.
struct FleetOptions: ParsableArguments {
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

    /// Sets the pairs, peers, secret and rate limits; the peer CA defaults to the server's own (`<data>/certs`).
    func apply(to configuration: inout ReplayServerConfiguration, file: FileSettings, dataDirectory: String) throws {
        if let value = localizePerMinute ?? file.localizePerMinute { configuration.localizeRequestsPerMinute = value }
        if let value = localizePerNetworkPerMinute ?? file.localizePerNetworkPerMinute {
            configuration.localizeRequestsPerNetworkPerMinute = value
        }
        if let value = peerRequestsPerMinute ?? file.peerRequestsPerMinute {
            configuration.peerRequestsPerMinute = value
        }
        configuration.fleetPeers = fleetPeer + (file.fleetPeer ?? [])
        configuration.fleetHostNames = fleetHostName + (file.fleetHostName ?? [])
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
        } catch {
            throw ValidationError((error as? ReplayServerError)?.message ?? "\(error)")
        }
        if let seconds = peerTimeout ?? file.peerTimeout {
            guard seconds.isFinite, seconds > 0, seconds <= 600 else {
                throw ValidationError("--peer-timeout must lie in (0, 600] seconds")
            }
            configuration.peerTimeout = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        let ownCA = (dataDirectory as NSString).appendingPathComponent("certs/ca.crt")
        configuration.peerCACertificatePath =
            peerCA ?? file.peerCA ?? (FileManager.default.fileExists(atPath: ownCA) ? ownCA : nil)
        configuration.peerAnalyzerPort = peerAnalyzerPort ?? file.peerAnalyzerPort ?? 56566
    }
}

/// Measurements beside the replay: TCP_INFO loss sampling and the WeHeY merge-point probe.
struct ProbeOptions: ParsableArguments {
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

    /// Sets the loss sampling period and the merge-point probe (which needs its TTL and CAP_NET_RAW).
    func apply(to configuration: inout ReplayServerConfiguration, file: FileSettings) throws {
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
    }
}

/// The reference server's files: the per-test archive (M-Lab's spool) and the sockets' pcaps.
struct ArchiveOptions: ParsableArguments {
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

    /// Sets the archive writer and the pcap directory (the option, else the file, else `$WEHE_ARCHIVE` and
    /// `$WEHE_PCAP`).
    func apply(to configuration: inout ReplayServerConfiguration, file: FileSettings, logger: Logger) {
        let environment = ProcessInfo.processInfo.environment
        if let path = archive ?? file.archive ?? environment["WEHE_ARCHIVE"], !path.isEmpty {
            configuration.archive = ArchiveWriter(
                directory: path, uuidPrefix: archiveUUIDPrefix ?? file.archiveUUIDPrefix ?? "wehe", logger: logger)
            logger.info("archive: writing the reference server's files", metadata: ["wehe.archive": "\(path)"])
        }
        configuration.pcapDirectory = pcap ?? file.pcap ?? environment["WEHE_PCAP"]
    }
}

/// The operator dashboard: port, address, host names and login.
struct DashboardOptions: ParsableArguments {
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

    /// The operator dashboard's service over the server and its store; `nil` when no port is given.
    func service(
        store: any ResultStore, server: ReplayServer, file: FileSettings, replayDirectory: String, logger: Logger
    ) throws -> (any Service)? {
        guard let listenPort = ServeCommand.port(dashboardPort, file.dashboardPort, default: -1), listenPort >= 0 else {
            return nil
        }
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
        return try ServeCommand.operatorDashboard(
            store: store, server: server, bind: dashboardAddress, port: listenPort,
            hosts: dashboardHost + (file.dashboardHost ?? []), token: token,
            catalog: try? ReplayLibrary(directory: replayDirectory).catalog(), logger: logger)
    }
}
