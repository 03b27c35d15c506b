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

/// The server side of one side channel.
final class FakeSideChannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let server: FakeWeheServer
    private var framer = SideChannelFramer()
    private var received: [String] = []
    private var declaration: IDDeclaration?
    private var done = ""
    private var index = -1

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelActive(context: ChannelHandlerContext) {
        let evict = server.behaviour.closeSideChannelsAccepted
        let atOnce = !server.behaviour.closesAtFirstBytes
        let evicted = server.state.withLock { state in
            let position = state.sideChannelsAccepted
            state.sideChannelsAccepted += 1
            guard !evict(position) else {
                if atOnce { state.sideChannelsEvicted += 1 }
                return true
            }
            state.messages.append([])
            index = state.messages.count - 1
            return false
        }
        if evicted && atOnce {
            context.close(promise: nil)
            return
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard index >= 0 else {
            // Closed at its first bytes (`closesAtFirstBytes`): counted once, however the bytes arrive.
            if index == -1 { server.state.withLock { $0.sideChannelsEvicted += 1 } }
            index = -2
            context.close(promise: nil)
            return
        }
        framer.append(unwrapInboundIn(data).readableBytesView)
        while let frame = try? framer.nextFrame() {
            handle(String(decoding: frame, as: UTF8.self), frame: frame, channel: context.channel)
        }
    }

    private func handle(_ text: String, frame: [UInt8], channel: any Channel) {
        received.append(text)
        let position = received.count
        server.state.withLock { $0.messages[index].append(text) }
        switch position {
        case 1:
            declaration = try? IDDeclaration(parsing: frame)
            if let declaration { server.state.withLock { $0.declarations.append(declaration) } }
        case 2 where server.behaviour.closeUncleanlyAfterDeclaration:
            (try? channel.pipeline.syncOperations.handler(type: UncleanCloser.self))?.closeSocket()
        case 2, 3:
            guard (position == 3) == server.behaviour.grantsAfterNoIperf else { return }
            let strict = server.behaviour.refusesChangeSpecs && received[1] != SideChannelMessage.noChange
            let grant =
                strict
                ? "0;5;unknown change spec"
                : server.behaviour.permission ?? "1;127.0.0.1;\(server.behaviour.sampleCount)"
            FakeWeheServer.send(grant, on: channel)
            if grant.hasPrefix("0") { channel.close(promise: nil) }
        case 4:
            guard let declaration, let trace = server.traces[declaration.replayName] else {
                channel.close(promise: nil)
                return
            }
            server.state.withLock { $0.current = (trace, channel) }
            FakeWeheServer.send(server.portMap(), on: channel)
            FakeWeheServer.send(trace.transport == .udp ? "1" : "0", on: channel)
        default:
            if text.hasPrefix("DONE;") {
                done = text
            } else if text.hasPrefix("[[") {
                if let declaration, let samples = try? ThroughputUpload.parse(frame) {
                    let upload = FakeWeheServer.Upload(
                        declaration: declaration, done: done, samples: samples.droppingLastSample())
                    server.state.withLock { $0.uploads.append(upload) }
                }
                if !server.behaviour.acknowledgesAfterResultNo { FakeWeheServer.send("OK", on: channel) }
            } else if text == "Result;No" {
                FakeWeheServer.send("OK", on: channel)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.state.withLock { $0.sideChannelsClosed += 1 }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Sits next to the socket, below TLS: `closeSocket()` closes the connection from there, so no TLS close_notify is
/// sent first.
final class UncleanCloser: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Closes the socket; call on the channel's event loop.
    func closeSocket() {
        context?.close(promise: nil)
    }
}

/// TCP replay: read each request group, answer with `response_len` zero bytes.
final class FakeTCPReplayHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: FakeWeheServer
    private var groups: [(request: Int, response: Int)] = []
    private var buffered = 0
    private var loaded = false

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !loaded {
            loaded = true
            server.state.withLock { $0.tcpConnections += 1 }
            guard let trace = server.state.withLock({ $0.current?.trace }) else {
                context.close(promise: nil)
                return
            }
            var accumulated = 0
            for packet in trace.packets {
                accumulated += packet.payload.count
                if packet.responseLength > 0 {
                    groups.append((accumulated, packet.responseLength))
                    accumulated = 0
                }
            }
        }
        buffered += unwrapInboundIn(data).readableBytes
        guard !server.behaviour.stallReplay else { return }
        while let group = groups.first, buffered >= group.request {
            buffered -= group.request
            groups.removeFirst()
            var length = group.response
            if let limit = server.behaviour.closeAfterBytes { length = min(length, limit) }
            context.writeAndFlush(
                wrapOutboundOut(context.channel.allocator.buffer(repeating: 0, count: length)), promise: nil)
            if server.behaviour.closeAfterBytes != nil {
                context.close(promise: nil)
                return
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// UDP replay: echo every datagram; `STARTED` before the first, `DONE` after the trace's last.
final class FakeUDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let server: FakeWeheServer
    private var seen: [SocketAddress: Int] = [:]

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let current = server.state.withLock({ $0.current }) else { return }
        let port = UInt16(envelope.remoteAddress.port ?? 0)
        let count = (seen[envelope.remoteAddress] ?? 0) + 1
        seen[envelope.remoteAddress] = count
        server.state.withLock { $0.udpDatagrams += 1 }
        if count == 1 {
            FakeWeheServer.send(SideChannelMessage.Notification.started(clientPort: port).body, on: current.channel)
        }
        context.writeAndFlush(
            wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: envelope.data)), promise: nil
        )
        if count == current.trace.packets.count {
            FakeWeheServer.send(SideChannelMessage.Notification.done(clientPort: port).body, on: current.channel)
        }
    }
}

/// The analyzer: `analyze` → success; `singleResult` → not ready N times, then means and area from the uploads.
final class FakeAnalyzerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let server: FakeWeheServer
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            var parameters = FormParameters.parse(query)
            for (key, value) in FormParameters.parse(String(decoding: body, as: UTF8.self)) where parameters[key] == nil
            {
                parameters[key] = value
            }
            respond(context, answer(parameters))
        }
    }

    private func answer(_ parameters: [String: String]) -> String {
        switch parameters["command"] {
        case "analyze":
            server.state.withLock { $0.analyzeRequests.append(parameters) }
            return #"{"success": true}"#
        case "singleResult":
            let userID = parameters["userID"] ?? ""
            let historyCount = Int(parameters["historyCount"] ?? "") ?? -1
            return server.state.withLock { state -> String in
                state.resultQueries += 1
                if state.answered.contains(historyCount) { state.queriesAfterSuccess += 1 }
                if let gate = server.behaviour.resultGate, gate.holds() {
                    return AnalyzerFailure(message: "No result found").body
                }
                if state.notReadyLeft > 0 {
                    state.notReadyLeft -= 1
                    return AnalyzerFailure(message: "No result found").body
                }
                let uploads = state.uploads.filter { $0.declaration.historyCount == historyCount }
                guard let originalSamples = uploads.last(where: { $0.declaration.testID == 0 })?.samples,
                    let controlSamples = uploads.last(where: { $0.declaration.testID == 1 })?.samples
                else { return AnalyzerFailure(message: "No result found").body }
                let original = server.behaviour.meansMbps?.original ?? originalSamples.meanMbps ?? 0
                let control = server.behaviour.meansMbps?.control ?? controlSamples.meanMbps ?? 0
                state.answered.insert(historyCount)
                state.notReadyLeft = server.behaviour.notReadyAnswers
                let larger = max(original, control)
                let area = server.behaviour.areaTest ?? (larger > 0 ? (control - original) / larger : 0)
                return SingleResult(
                    replayName: uploads.last?.declaration.replayName ?? "", date: "2026-01-01 00:00:00",
                    userID: server.behaviour.analyzerUserID ?? userID, extraString: "0", historyCount: historyCount,
                    testID: 1, areaTest: area, ks2RatioTest: 1, originalMeanMbps: original, controlMeanMbps: control,
                    ksStatistic: 0.2, ksPValue: server.behaviour.ksPValue,
                    insufficientData: server.behaviour.insufficientData
                ).responseBody
            }
        case "getServers":
            server.state.withLock { $0.getServersQueries += 1 }
            guard let pair = server.behaviour.serverPair else {
                return AnalyzerFailure(message: "No Y-topology found.").body
            }
            let items = pair.map { JSONValue.string($0) }
            return JSONValue.object([
                ("success", .bool(true)),
                (
                    "response",
                    .object([("server-site-pairs", .array([])), ("server-ip-pairs", .array([.array(items)]))])
                ),
            ]).serialized()
        case "localize":
            server.state.withLock { $0.localizeRequests.append(parameters) }
            return server.behaviour.localizeAnswer
        case "localizeResult":
            let notReady = server.state.withLock { state -> Bool in
                state.localizeResultQueries.append(parameters)
                return state.localizeResultQueries.count <= server.behaviour.localizationNotReady
            }
            if notReady { return AnalyzerFailure(message: "No result found").body }
            switch server.behaviour.localization {
            case .never: return AnalyzerFailure(message: "No result found").body
            case .raw(let body): return body
            case .ready(let mwuPValue, let correlationPValues):
                let counts = (parameters["historyCounts"] ?? "").filter { $0.isNumber || $0 == "," }
                    .split(separator: ",").map { JSONValue.number(Double($0) ?? -1, text: String($0)) }
                var tests: [JSONValue] = []
                var response: [(String, JSONValue)] = [
                    ("userID", .string(parameters["userID"] ?? "")), ("historyCounts", .array(counts)),
                    ("testID", .string("0")),
                ]
                if let mwuPValue {
                    tests.append(.string("pairsum_vs_single_xput"))
                    response.append(
                        (
                            "pairsum_vs_single_xput",
                            .object([
                                ("mwuVal", .number(4100, text: "4100.0")),
                                ("mwuPVal", .number(mwuPValue, text: String(mwuPValue))),
                                ("simReplaysAvgXput", .array([.number(1, text: "1.0"), .number(1.1, text: "1.1")])),
                                ("simReplaySumAvgXput", .number(2.1, text: "2.1")),
                                ("singleReplayAvgXput", .number(2, text: "2.0")),
                            ])
                        ))
                }
                if let correlationPValues {
                    tests.append(.string("loss_correlation"))
                    response.append(
                        (
                            "loss_correlation",
                            .object([
                                (
                                    "intervalSizes",
                                    .array(
                                        correlationPValues.indices.map {
                                            .number(0.1 * Double($0 + 1), text: String(0.1 * Double($0 + 1)))
                                        })
                                ),
                                ("corrPValues", .array(correlationPValues.map { .number($0, text: String($0)) })),
                                (
                                    "simReplaysAvgLoss",
                                    .array([.number(0.01, text: "0.01"), .number(0.02, text: "0.02")])
                                ),
                            ])
                        ))
                }
                response.insert(("localization_tests", .array(tests)), at: 3)
                return JSONValue.object([("success", .bool(true)), ("response", .object(response))]).serialized()
            }
        default:
            return AnalyzerFailure(message: "unknown command").body
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ text: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
