package import Foundation
package import Logging
package import Prometheus
package import WeheAnalysis
package import WeheCore
package import WeheStore
package import WeheWire

/// Everything a `ReplayServer` needs: plain values with the published defaults, plus the injected result store,
/// logger and metrics registry. Built once by `wehe-server serve` (or by a test) and handed to the server.
package struct ReplayServerConfiguration: Sendable {
    /// Where the replay listeners sit.
    package enum ReplayPorts: Sendable, Hashable {
        /// Every listener on its recorded port plus `offset` (0 in real deployments). A port pushed past 65535 wraps
        /// into 1024…65535. The port map advertises the moved ports; the published clients follow the map.
        case recorded(offset: Int)
        /// Every listener on a port the operating system picks (tests). The port map advertises them.
        case ephemeral
    }

    /// How admission decides that a client already runs a test (protocol.md section 5.3 step 4).
    package enum AdmissionPolicy: String, Sendable, Hashable, CaseIterable {
        /// The published rule: one running test per client address (`realIP` when it is a real other address,
        /// else the socket peer); another user from that address is refused with `0;2;100`.
        case perAddress = "per-address"
        /// One running test per user id; many users may share an address (load tests from one host). Replay
        /// connections from a shared address go to the oldest session of that address still waiting for one.
        case perUser = "per-user"
    }

    /// PEM files of the TLS identity presented on the side channel (55556) and the HTTPS analyzer (56566).
    package struct TLSFiles: Sendable, Hashable {
        /// The certificate chain, leaf first.
        package var certificateChainPath: String
        /// The private key of the leaf.
        package var privateKeyPath: String
        /// Creates the pair of paths.
        package init(certificateChainPath: String, privateKeyPath: String) {
            self.certificateChainPath = certificateChainPath
            self.privateKeyPath = privateKeyPath
        }
    }

    /// Timeouts and limits that protect the server from slow, silent or hostile peers.
    package struct Limits: Sendable, Hashable {
        /// Open TCP connections (side channels and replay connections together); more are closed at once.
        package var maximumConnections = 4096
        /// Open TCP connections from one client address; more are closed at once.
        package var maximumConnectionsPerAddress = 256
        /// Concurrently admitted sessions; more are refused with `0;3`.
        package var maximumSessions = 2048
        /// Concurrently admitted sessions from one network (the client's /24 for IPv4, /64 for IPv6); more are
        /// refused with `0;3`, so a few addresses cannot hold every slot.
        package var maximumSessionsPerNetwork = 32
        /// Concurrently admitted sessions from one IPv6 /48 (a site: one customer's or one provider pool's block of
        /// /64s); more are refused with `0;3`. Four /64s' worth: without it the 64 /64s of one /48 hold all 2048.
        package var maximumSessionsPerSite = 128
        /// Longest wait for the next step of an admitted session's protocol (iperf and mobile-stats messages after
        /// the grant, the replay's first connection or datagram after the port map, the throughput upload after
        /// `DONE`); a session that stops advancing is closed.
        package var progressTimeout: Duration = .seconds(20)
        /// Longest time from the port map to the client's `DONE` (the replay itself: at most 45 s of traffic, plus
        /// the client's waits).
        package var replayPhaseTimeout: Duration = .seconds(100)
        /// After `DONE`, how long a replay that does not yet count as run (`ReplayProgress`) is given for its last
        /// datagrams and requests to be counted before its samples are refused: a busy listener reads them late.
        package var lateReplayTrafficGrace: Duration = .seconds(2)
        /// Within that grace, how long a UDP replay's count may stand still before it is judged on what it has: a
        /// count that does not move is not a listener catching up.
        package var lateReplayTrafficQuiet: Duration = .milliseconds(500)
        /// The same for a TCP replay. Shorter: at `DONE` the client has received every response, so the server read
        /// every request before it; only the count of the last response's write can still be in flight.
        package var lateReplayTrafficQuietTCP: Duration = .milliseconds(150)

        /// The quiet period of a replay over `transport`: `lateReplayTrafficQuiet` for UDP, whose datagrams a busy
        /// listener may still be reading, `lateReplayTrafficQuietTCP` otherwise.
        package func lateReplayTrafficQuiet(for transport: TransportProtocol) -> Duration {
            transport == .udp ? lateReplayTrafficQuiet : lateReplayTrafficQuietTCP
        }

        /// Analyzer and dashboard connections: time from accept to the first byte (TLS handshake or request).
        package var httpFirstByteTimeout: Duration = .seconds(5)
        /// Analyzer and dashboard connections: time to receive a whole request (head and body), from accept or from
        /// the end of the previous response.
        package var httpRequestTimeout: Duration = .seconds(10)
        /// Analyzer and dashboard connections: longest silence between requests.
        package var httpIdleTimeout: Duration = .seconds(30)
        /// Time from accept to a complete TLS handshake, ID declaration and change spec (side channel), or to the
        /// first bytes of a replay connection.
        package var firstMessageTimeout: Duration = .seconds(10)
        /// Longest silence on an admitted side channel (the client is quiet while it replays: at most 45 s).
        package var sideChannelIdleTimeout: Duration = .seconds(120)
        /// Longest silence on a TCP replay connection (the client waits for recorded timestamps).
        package var replayIdleTimeout: Duration = .seconds(60)
        /// Longest life of a TCP replay connection (the client stops after 45 s).
        package var replayMaximumDuration: Duration = .seconds(90)
        /// How long the server streams one UDP flow at most (protocol.md 7.2: 45 s).
        package var udpStreamDuration: Duration = .seconds(45)
        /// Longest life of a session (the published server's watchdog: 5 minutes).
        package var sessionMaximumDuration: Duration = .seconds(300)
        /// Largest side-channel message before admission (ID declaration, change spec).
        package var preAdmissionMessageBytes = 4096
        /// Largest side-channel message after admission (throughput upload, mobile stats).
        package var maximumMessageBytes = 1 << 20
        /// Refuse new sessions (`0;3`) when the used share of memory exceeds this fraction.
        package var memoryUseLimit = 0.95
        /// Refuse new sessions (`0;3`) when the used share of the data directory's disk exceeds this fraction.
        package var diskUseLimit = 0.95
        /// Replays one client network (IPv4 /24, IPv6 /48) may store in `storedReplayWindow` (`StoredReplayQuota`).
        package var storedReplaysPerNetwork = 400
        /// The rolling window of `storedReplaysPerNetwork`.
        package var storedReplayWindow: Duration = .seconds(86_400)
        /// `DPIanalysis` requests per user and minute, twice as many in a burst (`DPIRequestLimits`).
        package var dpiRequestsPerUserPerMinute = 30
        /// DPI requests (every DPI command) per client network and minute, twice as many in a burst.
        package var dpiRequestsPerNetworkPerMinute = 60
        /// On SIGTERM: how long running sessions may go on before they are cut.
        package var shutdownGracePeriod: Duration = .seconds(30)
        /// Analyses computing at once, server-wide (`AnalysisScheduler`, on threads of their own at a lowered
        /// priority); `nil`: half the cores, at least 1.
        package var analysesRunning: Int?
        /// Analyses running or waiting for one client network (IPv4 /24, IPv6 /64); more are refused at once.
        package var analysesPerNetwork = 2
        /// Analyses waiting for a slot, server-wide; more are refused at once (the samples stay stored).
        package var analysesWaiting = 64
        /// Creates the default limits.
        package init() {}
    }

    /// Directory of replay traces (`*.pcap_client_all.json`, optional `*.wehe_server.json`).
    package var replayDirectory: String
    /// Directory whose disk is watched for admission (the database lives there).
    package var dataDirectory: String?
    /// Writes the reference server's per-test files (M-Lab's spool) beside the database; `nil` writes none.
    package var archive: ArchiveWriter?
    /// Writes the server side of each TCP replay connection as a pcap below this directory (`--pcap`); `nil` none.
    package var pcapDirectory: String?
    /// Largest pcap file per replay connection, bytes (records beyond it are left out).
    package var pcapMaximumBytes = 64 * 1024 * 1024
    /// Captures each test's packets on this interface with libpcap instead of writing the server socket's view
    /// (`--capture-interface`; needs `pcapDirectory`, libpcap and CAP_NET_RAW); `nil` captures on no interface.
    package var capture: InterfaceCaptureSettings?
    /// Address every listener binds to.
    package var bindAddress = "0.0.0.0"
    /// Side channel with TLS (published: 55556); `nil` disables it. 0 picks a free port.
    package var sideChannelTLSPort: Int? = 55556
    /// Side channel without TLS (published: 55555); `nil` disables it.
    package var sideChannelPlainPort: Int? = 55555
    /// Analyzer over HTTPS (published: 56566); `nil` disables it.
    package var analyzerTLSPort: Int? = 56566
    /// Analyzer over plain HTTP (published: 56565), also serving `/metrics`; `nil` disables it.
    package var analyzerPlainPort: Int? = 56565
    /// Replay listener placement.
    package var replayPorts: ReplayPorts = .recorded(offset: 0)
    /// Extra TCP ports that answer `WHATSMYIPMAN` (and accept replays) besides the traces' ports; moved like them.
    package var extraReplayPorts: [Int] = [80]
    /// TLS identity; required when a TLS port is enabled.
    package var tls: TLSFiles?
    /// Admission rule.
    package var admission: AdmissionPolicy = .perAddress
    /// Samples the client is told to take (the grant's third field; the published server says 100).
    package var sampleCount = 100
    /// Timeouts and limits.
    package var limits = Limits()
    /// The name recorded with every test (host name of this server).
    package var serverName = "wehe-server"
    /// The operator's IP-to-AS table (`--asn-prefixes`, `--asn-names`): the AS of each client's own side-channel
    /// address is stored with its test and told to that client in its `singleResult` answer; `nil` = none.
    package var asTable: ASTable?
    /// Per-test analysis settings.
    package var analysis = DifferentiationConfiguration()
    /// WeHeY server pairs answered to `getServers`, matched by the client's address prefix (longest match wins,
    /// pairs without a prefix are the default).
    package var localizationServerPairs: [LocalizationPair] = []
    /// M-Lab site pairs answered to `getServers` in `server-site-pairs` (the client locates each site and enters
    /// its machine through the access envelope), matched like `localizationServerPairs`. A site is not a host: it
    /// never makes a server askable by `localize` (list the fleet's machines in `fleetPeers`).
    package var localizationSitePairs: [LocalizationPair] = []
    /// CA certificate that the other server of a WeHeY pair presents a certificate from (its analyzer is asked for
    /// measurements over HTTPS, the certificate must name the server); `nil` asks no other server (signed requests
    /// never go over plain HTTP).
    package var peerCACertificatePath: String?
    /// HTTPS analyzer port of the other server of a WeHeY pair.
    package var peerAnalyzerPort = 56566
    /// Servers `localize` may fetch measurements from besides those of `localizationServerPairs` (addresses or
    /// names); a server named in a request but in neither list is never contacted.
    package var fleetPeers: [String] = []
    /// Names and addresses other fleet members reach this server by, besides the address a request arrives on and
    /// `serverName` (a public address behind NAT, a proxy's address): a fleet request must be signed for one of them.
    package var fleetHostNames: [String] = []
    /// `localize` requests allowed per client address and minute (a burst of as many); as many per user id.
    package var localizeRequestsPerMinute = 6
    /// `localize` requests allowed per client network (/24, /64) and minute (a burst of as many).
    package var localizeRequestsPerNetworkPerMinute = 12
    /// Signed requests this server sends to each fleet peer a minute (a burst of as many): each costs the peer a
    /// remembered nonce, and `localize`, open to anyone, triggers them.
    package var peerRequestsPerMinute = 60
    /// Networks of proxies whose connections may declare the client's real address (`realIP` of the ID
    /// declaration); from anyone else the declared address is ignored and the socket peer counts.
    package var trustedProxies: [LocalizationPair.Prefix] = []
    /// Session-log rows written per client network and minute for refused or failed declarations (a burst of as
    /// many); more are only counted and logged.
    package var sessionEventsPerMinute = 30
    /// The process's open-file limit (`RLIMIT_NOFILE`) read at start; the connection budget is sized to it. Tests
    /// inject a value.
    package var openFileLimit: @Sendable () -> Int? = { ReplayServerConfiguration.currentOpenFileLimit() }
    /// Longest time one request to the other server may take (connection, answer and all).
    package var peerTimeout: Duration = .seconds(8)
    /// Signs requests to fleet members and checks theirs (`getMeasurements` answers only fleet members); `nil`
    /// refuses every `getMeasurements` request and sends unsigned ones.
    package var fleetAuthenticator: FleetAuthenticator?
    /// How often the `TCP_INFO` counters of a TCP replay connection are read for its loss timeline; `nil` keeps
    /// no loss timelines.
    package var lossSamplingPeriod: Duration? = .milliseconds(10)
    /// Probes each original TCP replay for WeHeY's blind spot (`MergePointProber`); `nil` (the
    /// default) sends no probes.
    package var mergePointProbe: MergePointProbeSettings?
    /// Recorded tests clients may bring when the server does not have them (`--accept-client-traces`,
    /// `ClientTraceStore`); `nil` (the default) refuses every upload.
    package var clientTraces: ClientTracePolicy?
    /// Where results go.
    package var store: any ResultStore
    /// Prometheus registry served at `/metrics`; `nil` disables the endpoint.
    package var metricsRegistry: PrometheusCollectorRegistry?
    /// The logger every part derives its own from.
    package var logger: Logger
    /// Wall-clock time (dates of stored records).
    package var now: @Sendable () -> Date = { Date() }

    /// Creates a configuration with the published defaults.
    package init(replayDirectory: String, store: any ResultStore, logger: Logger) {
        self.replayDirectory = replayDirectory
        self.store = store
        self.logger = logger
    }

    /// Checks ports and limits.
    /// - Throws: `ReplayServerError` `.invalidConfiguration` naming the offending value.
    package func validated() throws(ReplayServerError) -> ReplayServerConfiguration {
        let ports: [(String, Int?)] = [
            ("side-channel TLS port", sideChannelTLSPort), ("side-channel port", sideChannelPlainPort),
            ("analyzer TLS port", analyzerTLSPort), ("analyzer port", analyzerPlainPort),
        ]
        for (name, port) in ports {
            if let port, !(0...65535).contains(port) {
                throw ReplayServerError(.invalidConfiguration, "\(name) \(port) is outside 0…65535")
            }
        }
        if case .recorded(let offset) = replayPorts, !(-65535...65535).contains(offset) {
            throw ReplayServerError(.invalidConfiguration, "port offset \(offset) is outside -65535…65535")
        }
        if tls == nil, sideChannelTLSPort != nil || analyzerTLSPort != nil {
            throw ReplayServerError(
                .invalidConfiguration,
                "TLS ports are enabled but no certificate and key are configured (run `wehe-server certs`)"
            )
        }
        guard (1...100_000).contains(sampleCount) else {
            throw ReplayServerError(.invalidConfiguration, "sample count \(sampleCount) is outside 1…100000")
        }
        guard limits.maximumConnections > 0, limits.maximumConnectionsPerAddress > 0, limits.maximumSessions > 0,
            limits.maximumSessionsPerNetwork > 0, limits.maximumSessionsPerSite > 0, localizeRequestsPerMinute > 0,
            sessionEventsPerMinute > 0, localizeRequestsPerNetworkPerMinute > 0, peerRequestsPerMinute > 0
        else {
            throw ReplayServerError(.invalidConfiguration, "connection and session limits must be positive")
        }
        if let period = lossSamplingPeriod, period < .milliseconds(1) || period > .seconds(1) {
            throw ReplayServerError(.invalidConfiguration, "loss sampling period \(period) is outside 1 ms…1 s")
        }
        if let mergePointProbe { _ = try mergePointProbe.validated() }
        guard peerTimeout > .zero else {
            throw ReplayServerError(.invalidConfiguration, "the peer timeout must be positive")
        }
        return self
    }
}
