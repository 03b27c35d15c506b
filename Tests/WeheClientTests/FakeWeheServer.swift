import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore
import WeheTestKit
import WeheWire

/// A scripted Wehe server on loopback (port 0 everywhere), implementing just enough of protocol.md from the
/// server's side to exercise the client: TLS side channel, TCP replay (zero bytes of each `response_len`), UDP echo
/// with `STARTED`/`DONE`, and an HTTPS analyzer that computes means and the area from the uploaded samples.
final class FakeWeheServer: Sendable {
    struct Behaviour: Sendable {
        /// Replaces the grant (e.g. `0;2;100`).
        var permission: String?
        /// Refuses with `0;5;<why>` a change spec that is not the published no-change one (a server strict about
        /// change specs it does not know).
        var refusesChangeSpecs = false
        /// Sample count in the grant.
        var sampleCount = 100
        /// The TCP replay listener reads but never answers.
        var stallReplay = false
        /// The TCP replay listener closes after this many response bytes of the first response.
        var closeAfterBytes: Int?
        /// Flows whose recorded server port is this one are mapped to a closed port.
        var blockedPort: UInt16?
        /// `singleResult` answers "No result found" this many times first.
        var notReadyAnswers = 1
        /// While this gate is closed, `singleResult` answers "No result found" (and the gate hears of each query).
        var resultGate: ResultGate?
        /// The analyzer reports this user id instead of the caller's.
        var analyzerUserID: String?
        /// The KS p-value the analyzer reports.
        var ksPValue = 0.5
        /// Forces `area_test` (otherwise computed from the means).
        var areaTest: Double?
        /// Forces the original's and the control's mean throughput (otherwise the means of the uploaded samples,
        /// whose order on loopback is noise).
        var meansMbps: (original: Double, control: Double)?
        /// Our server's `insufficient_data` key in `singleResult` (too few measurements).
        var insufficientData: String?
        /// After the ID declaration and change spec, drop the side channel without a TLS close_notify instead of
        /// answering (as the reference server does when it lacks a replay's data).
        var closeUncleanlyAfterDeclaration = false
        /// Leave the port-map entry out.
        var omitPortMap = false
        /// Send the permission only once `NoIperf` has arrived: a client that waits for the permission before it
        /// sends `NoIperf` never gets it (the client sends messages 1, 2, 4 and 5 in one write).
        var grantsAfterNoIperf = false
        /// Acknowledge the samples only once `Result;No` has arrived, with a single `OK`: a client that waits for the
        /// acknowledgement before it sends `Result;No` never gets it.
        var acknowledgesAfterResultNo = false
        /// Close the side channels accepted at these positions (0 = the first) without answering: at once, as a
        /// server evicting idle connections under a flood does, or when their first bytes arrive (after the TLS
        /// handshake), as a server restarted meanwhile does.
        var closeSideChannelsAccepted: @Sendable (Int) -> Bool = { _ in false }
        var closesAtFirstBytes = false
        /// WeHeY: the pair `getServers` answers (`[ip1, ip2, networks]`); `nil` answers "No Y-topology found.".
        var serverPair: [String]?
        /// WeHeY: what `localize` answers.
        var localizeAnswer = #"{"success": true}"#
        /// WeHeY: how `localizeResult` answers.
        var localization = Localization.ready(mwuPValue: 0.01, correlationPValues: nil)
        /// WeHeY: `localizeResult` answers "No result found" this many times first.
        var localizationNotReady = 1
    }

    /// Scripted `localizeResult` answers.
    enum Localization: Sendable {
        /// A result for the caller's user and history counts with these tests (`nil` leaves a test out).
        case ready(mwuPValue: Double?, correlationPValues: [Double]?)
        /// Always "No result found".
        case never
        /// This body, verbatim.
        case raw(String)
    }

    struct Upload: Sendable {
        var declaration: IDDeclaration
        var done: String
        var samples: ThroughputSeries
    }

    struct State {
        var declarations: [IDDeclaration] = []
        var messages: [[String]] = []
        var uploads: [Upload] = []
        var sideChannelsClosed = 0
        /// Side channels accepted, and how many of them the server closed unanswered (`closeSideChannelsAccepted`).
        var sideChannelsAccepted = 0
        var sideChannelsEvicted = 0
        var analyzeRequests: [[String: String]] = []
        var resultQueries = 0
        var queriesAfterSuccess = 0
        var answered: Set<Int> = []
        var tcpConnections = 0
        var udpDatagrams = 0
        var current: (trace: ReplayTrace, channel: any Channel)?
        var notReadyLeft: Int
        var localizeRequests: [[String: String]] = []
        var localizeResultQueries: [[String: String]] = []
        var getServersQueries = 0
    }

    let behaviour: Behaviour
    let traces: [String: ReplayTrace]
    let state: Mutex<State>
    private let channels = Mutex<[any Channel]>([])
    private let refusingPorts = Mutex<[RefusingPort]>([])
    private let ports = Mutex<(side: Int, tcp: Int, udp: Int, analyzer: Int, closed: Int)>((0, 0, 0, 0, 0))

    var sideChannelPort: Int { ports.withLock { $0.side } }
    var analyzerPort: Int { ports.withLock { $0.analyzer } }
    var snapshot: State { state.withLock { $0 } }

    static var certificatePEM: String {
        String(decoding: (try? fileBytes(fixture("server.crt"))) ?? [], as: UTF8.self)
    }
    static var otherCertificatePEM: String {
        String(decoding: (try? fileBytes(fixture("other.crt"))) ?? [], as: UTF8.self)
    }

    static func fixture(_ name: String) -> String {
        TestResources.packageRoot + "/Tests/WeheClientTests/Fixtures/" + name
    }

    static func fileBytes(_ path: String) throws -> [UInt8] {
        try ReplayFileReader().read(path)
    }

    private init(traces: [ReplayTrace], behaviour: Behaviour) {
        self.behaviour = behaviour
        self.traces = Dictionary(traces.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.state = Mutex(State(notReadyLeft: behaviour.notReadyAnswers))
    }

    /// Starts a server on `host`; `sideChannelPort`/`analyzerPort` 0 let the system choose (a WeHeY pair needs the
    /// second server on the first one's ports, as the client uses one port pair for both).
    static func start(
        traces: [ReplayTrace],
        behaviour: Behaviour = Behaviour(),
        host: String = "127.0.0.1",
        sideChannelPort: Int = 0,
        analyzerPort: Int = 0
    ) async throws -> FakeWeheServer {
        let server = FakeWeheServer(traces: traces, behaviour: behaviour)
        do {
            try await server.bind(host: host, sideChannelPort: sideChannelPort, analyzerPort: analyzerPort)
        } catch {
            await server.stop()  // whatever was bound before the failure
            throw error
        }
        return server
    }

    func stop() async {
        for channel in channels.withLock({ $0 }) { _ = try? await channel.close().get() }
    }

    private func bind(host: String, sideChannelPort: Int, analyzerPort: Int) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let certificates = try NIOSSLCertificate.fromPEMFile(Self.fixture("server.crt"))
        let key = try NIOSSLPrivateKey(file: Self.fixture("server.key"), format: .pem)
        let tls = try NIOSSLContext(
            configuration: .makeServerConfiguration(
                certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key)))
        let side = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(UncleanCloser())
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.addHandler(FakeSideChannelHandler(server: self))
                }
            }
            .bind(host: host, port: sideChannelPort).get()
        channels.withLock { $0.append(side) }
        let tcp = try await ServerBootstrap(group: group)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FakeTCPReplayHandler(server: self))
                }
            }
            .bind(host: host, port: 0).get()
        channels.withLock { $0.append(tcp) }
        let udp = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FakeUDPHandler(server: self))
                }
            }
            .bind(host: host, port: 0).get()
        channels.withLock { $0.append(udp) }
        let analyzer = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(FakeAnalyzerHandler(server: self))
                }
            }
            .bind(host: host, port: analyzerPort).get()
        channels.withLock { $0.append(analyzer) }
        // A port that refuses connections while this server lives (a closed listener's port can be handed to
        // another test's server at once in a parallel run).
        let refusing = try RefusingPort(host: host)
        refusingPorts.withLock { $0.append(refusing) }
        let closedPort = refusing.port
        ports.withLock {
            $0 = (
                side.localAddress?.port ?? 0, tcp.localAddress?.port ?? 0, udp.localAddress?.port ?? 0,
                analyzer.localAddress?.port ?? 0, closedPort
            )
        }
    }

    /// The port map: every flow of every trace → our listeners (or the closed port for the blocked one).
    func portMap() -> String {
        let ports = self.ports.withLock { $0 }
        var map = PortMap()
        guard !behaviour.omitPortMap else { return map.body }
        for trace in traces.values {
            for flow in trace.flows {
                let target =
                    flow.serverPort == behaviour.blockedPort
                    ? ports.closed : (trace.transport == .udp ? ports.udp : ports.tcp)
                if trace.transport == .udp {
                    map.udp[flow.serverAddress, default: [:]][flow.serverPortString] = .init(port: target)
                } else {
                    map.tcp[flow.serverAddress, default: [:]][flow.serverPortString] = .init(port: target)
                }
            }
        }
        return map.body
    }

    static func send(_ body: String, on channel: any Channel) {
        channel.writeAndFlush(channel.allocator.buffer(bytes: SideChannelFramer.frame(body)), promise: nil)
    }
}
