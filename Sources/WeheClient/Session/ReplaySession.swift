import Logging
import NIOCore
import NIOSSL
import WeheCore
import WeheReplay
import WeheWire

/// One replay of a test over its own side channel (protocol.md section 5.2): ID declaration, `[-1, null, null]`,
/// `NoIperf` and `NoMobileStats` in one write, permission, port map, sender count, the replay, `DONE;<seconds>`, the
/// samples and `Result;No` in one write, `OK` (skipping `STARTED`/`DONE` notifications), close. The side channel is
/// closed on every path, including errors and cancellation, so the server releases the client's slot.
struct ReplaySession: Sendable {
    /// What one replay produced.
    struct Outcome: Sendable {
        var outcome: ReplayOutcome
        var clientIP: String
        /// UDP replays: digests of the received datagrams in arrival order (`DatagramReceipt`); `nil` for TCP.
        var receivedDatagrams: [UInt32]?
        /// Why the server would not store the samples, when `keepsRefusedSamples` let the replay end anyway.
        var samplesRefused: String? = nil
        /// Whether the server served the `slice` asked for (and the client replayed its side of it).
        var servedSlice = false
    }

    let serverAddress: String
    let configuration: ReplayClientConfiguration
    let tls: NIOSSLContext?
    let declaration: IDDeclaration
    let trace: ReplayTrace
    let appDuration: Double?
    let onProgress: @Sendable (ReplayProgress) -> Void
    /// The change spec sent as message 2: `[-1, null, null]` for every normal replay; a DPI probe of a server packet
    /// sends `[k, "ReplaceI", [L, R]]` (`DPITraceMap.changeSpec(for:)`).
    var changeSpec: String = SideChannelMessage.noChange
    /// A UDP slice to ask for (an adaptive verdict's short round) instead of `changeSpec`. When the server grants it
    /// (`PermissionReply.granted(servesSlice: true)`) both sides replay the slice; a server that does not know slices
    /// (the published one) serves the whole replay, and the client then replays its trace as it is, to the
    /// session's deadline: the replay's first seconds, as a short round of the call's opening would.
    var slice: UDPSlice?
    /// Ends the replay earlier than its protocol deadline (a UDP round of the adaptive verdict); never later.
    var deadline: Duration? = nil
    /// A server's refusal to store the samples ends the replay normally (the client measured it all the same): the
    /// adaptive verdict's rounds, which no server analyses, keep their measurement.
    var keepsRefusedSamples = false
    /// Within a test of many replays against this server: where this replay finds a side channel opened for it,
    /// and opens the next replay's when its own replay starts (`SideChannelAhead`).
    var ahead: SideChannelAhead? = nil

    /// Runs the replay. A recorded test the server does not have (`0;1`) is uploaded once
    /// (`ReplayClientConfiguration.clientTraceUpload`) and declared again.
    func run() async throws(ReplayClientError) -> Outcome {
        do {
            return try await runOnce()
        } catch let error where error.denial == .unknownReplay {
            guard let upload = configuration.clientTraceUpload, upload.files[trace.name] != nil else { throw error }
            try await upload.upload(
                replayName: trace.name, userID: declaration.userID, host: serverAddress, configuration: configuration,
                tls: tls)
            return try await runOnce()
        }
    }

    private func runOnce() async throws(ReplayClientError) -> Outcome {
        let tracker = UDPFlowTracker()
        let port = configuration.sideChannelPort
        if let ahead, let ready = await ahead.take(host: serverAddress, port: port, tls: tls) {
            ready.notifications.deliver(to: { tracker.record($0) })
            let granted: Granted?
            do {
                granted = try await declare(on: ready.connection)
            } catch {
                // A connection opened ahead that the server closed before answering the declaration (an idle
                // connection evicted under a flood, a server restarted meanwhile) costs only a connection of the
                // replay's own; any other failure is the server's answer and stands.
                let closedUnderIt = !ready.connection.isOpen
                await ready.connection.close()
                guard closedUnderIt, error.code != .admissionRefused, error.code != .cancelled else { throw error }
                configuration.logger.debug(
                    "the side channel opened ahead was closed before the declaration was answered; opening another",
                    metadata: ["wehe.error": "\(error.message)"])
                granted = nil
            }
            if let granted { return try await finish(on: ready.connection, granted, tracker: tracker) }
        }
        let connection = try await SideChannelConnection.connect(
            host: serverAddress, port: port, tls: tls, connectTimeout: configuration.timing.connect,
            onNotification: { tracker.record($0) })
        let granted: Granted
        do {
            granted = try await declare(on: connection)
        } catch {
            await connection.close()
            throw error
        }
        return try await finish(on: connection, granted, tracker: tracker)
    }

    /// What the server's permission granted.
    private struct Granted {
        var clientIP: String
        var sampleCount: Int
        var servesSlice: Bool
    }

    /// Runs the rest of the exchange after the grant and closes the connection on every path.
    private func finish(on side: SideChannelConnection, _ granted: Granted, tracker: UDPFlowTracker)
        async throws(ReplayClientError) -> Outcome
    {
        do {
            let outcome = try await exchange(side, granted, tracker: tracker)
            side.closeWithoutWaiting()
            return outcome
        } catch {
            await side.close()
            throw error
        }
    }

    /// Messages 1-5: the declaration, the change spec, `NoIperf` and `NoMobileStats` in one write, then the
    /// permission. The last two are sent before the permission arrives: on a stream the server reads them after its
    /// answer all the same (the published server reads them after a denial too), and the replay saves the round
    /// trip a client that waits for the permission pays.
    private func declare(on side: SideChannelConnection) async throws(ReplayClientError) -> Granted {
        let read = configuration.timing.sideChannelRead
        try await side.send([
            declaration.body, slice?.changeSpec ?? changeSpec, SideChannelMessage.noIperf,
            SideChannelMessage.noMobileStats,
        ])
        let permissionBody = try await side.receive(timeout: read, expecting: "the permission")
        let permission: PermissionReply
        do {
            permission = try PermissionReply(parsing: permissionBody)
        } catch {
            let text = String(decoding: permissionBody.prefix(40), as: UTF8.self)
            if text.hasPrefix("0;") {
                throw ReplayClientError(
                    .admissionRefused, "the server refused the test with an unknown code ('\(text)')")
            }
            throw ReplayClientError(.protocolViolation, "the server's permission reply is malformed: \(error.message)")
        }
        switch permission {
        case .granted(let ip, let count, let servesSlice):
            return Granted(clientIP: ip, sampleCount: count, servesSlice: slice != nil && servesSlice)
        case .denied(let reason, _):
            throw ReplayClientError(
                .admissionRefused, "the server refused the test (code \(reason.rawValue)): \(reason.explanation)",
                denial: reason)
        }
    }

    private func exchange(_ side: SideChannelConnection, _ granted: Granted, tracker: UDPFlowTracker)
        async throws(ReplayClientError) -> Outcome
    {
        let read = configuration.timing.sideChannelRead
        let clientIP = granted.clientIP
        let sampleCount = granted.sampleCount
        let mapBody = try await side.receive(timeout: read, expecting: "the port map")
        let portMap: PortMap
        do {
            portMap = try PortMap(parsing: mapBody)
        } catch {
            throw ReplayClientError(.protocolViolation, "the server's port map is malformed: \(error.message)")
        }
        let countBody = try await side.receive(timeout: read, expecting: "the sender count")
        // Java tolerates junk here; so do we (0 senders).
        tracker.expect(Int(String(decoding: countBody.prefix(12), as: UTF8.self)) ?? 0)
        let transport = try makeTransport(portMap, tracker: tracker)
        let trace = granted.servesSlice ? slice.map { self.trace.slice($0) } ?? self.trace : self.trace
        var engineConfiguration = ReplayEngineConfiguration.standard(
            for: trace, appDuration: appDuration, sampleCount: sampleCount)
        engineConfiguration.idleTimeout = configuration.timing.replayIdle
        engineConfiguration.spinWindow = .microseconds(500)
        if let deadline = configuration.timing.replayDeadline { engineConfiguration.deadline = deadline }
        if let deadline { engineConfiguration.deadline = min(engineConfiguration.deadline, deadline) }
        let engine = ReplayEngine(
            configuration: engineConfiguration, clock: ContinuousClock(), logger: configuration.logger)
        // The next replay's side channel opens now, so that its TCP and TLS handshakes are over by the time this
        // replay has handed over its samples (opened once the bytes were in, its TLS handshake still cost a round
        // trip after the samples' OK). A server that closes it while it waits unused (ours does after 10 s without a
        // declaration) costs the next replay a connection of its own.
        ahead?.open(
            host: serverAddress, port: configuration.sideChannelPort, tls: tls,
            connectTimeout: configuration.timing.connect)
        let outcome: ReplayOutcome
        do {
            outcome = try await engine.run(trace: trace, transport: transport, onProgress: onProgress)
        } catch {
            throw ReplayClientError.replay(error, name: trace.name)
        }
        // `DONE`, the samples and `Result;No` go in one write, and the first `OK` (the samples' acknowledgement) ends
        // the exchange, as the published clients do: the reply to `Result;No` is a courtesy neither reads (ours stores
        // the samples before its first `OK`).
        try await side.send([
            SideChannelMessage.clientDone(durationSeconds: outcome.duration.inSeconds),
            ThroughputUpload.body(outcome.samples), SideChannelMessage.resultNo,
        ])
        let refused: String?
        do {
            try await awaitOK(side, what: "the server's acknowledgement of the samples")
            refused = nil
        } catch let error where keepsRefusedSamples && error.message.hasPrefix(Self.refusalLead) {
            refused = String(error.message.dropFirst(Self.refusalLead.count))
        }
        return Outcome(
            outcome: outcome, clientIP: clientIP, receivedDatagrams: (transport as? UDPReplayTransport)?.receipts.all,
            samplesRefused: refused, servedSlice: granted.servesSlice)
    }

    static let refusalLead = "the server refused the samples: "

    private func awaitOK(_ side: SideChannelConnection, what: String) async throws(ReplayClientError) {
        for _ in 0..<1000 {
            let body = try await side.receive(timeout: configuration.timing.sideChannelRead, expecting: what)
            if body == Array(SideChannelMessage.ok.utf8) { return }
            // Our server answers `Refused;<why>` instead of the OK when it will not store the samples (a replay it
            // did not see run, an upload larger than the replay could produce, a network over its quota): say why.
            let text = String(decoding: body.prefix(400), as: UTF8.self)
            if text.hasPrefix("Refused;") {
                throw ReplayClientError(.protocolViolation, Self.refusalLead + text.dropFirst("Refused;".count))
            }
            configuration.logger.debug(
                "skipping side-channel message",
                metadata: ["wehe.body": "\(String(decoding: body.prefix(20), as: UTF8.self))"])
        }
        throw ReplayClientError(.protocolViolation, "the server never acknowledged the samples")
    }

    private func makeTransport(_ map: PortMap, tracker: UDPFlowTracker) throws(ReplayClientError) -> any ReplayTransport
    {
        let isUDP = trace.transport == .udp
        var tcp: [CSPair: (host: String, port: Int)] = [:]
        var udp: [CSPair: SocketAddress] = [:]
        for flow in trace.flows {
            guard
                let endpoint = map.endpoint(udp: isUDP, serverAddress: flow.serverAddress, serverPort: flow.serverPort)
            else {
                throw ReplayClientError(
                    .portMapMissing,
                    "the server's port map has no \(isUDP ? "UDP" : "TCP") entry for \(flow.serverAddress) port \(flow.serverPortString)"
                )
            }
            let host = endpoint.host.isEmpty ? serverAddress : endpoint.host
            if isUDP {
                do {
                    udp[flow] = try SocketAddress.makeAddressResolvingHost(host, port: endpoint.port)
                } catch {
                    throw ReplayClientError(.unreachable, "cannot resolve the UDP replay address \(host): \(error)")
                }
            } else {
                tcp[flow] = (host, endpoint.port)
            }
        }
        if isUDP {
            return UDPReplayTransport(destinations: udp, tracker: tracker, drainLimit: configuration.timing.udpDrain)
        }
        return TCPReplayTransport(destinations: tcp, connectTimeout: configuration.timing.connect)
    }
}
