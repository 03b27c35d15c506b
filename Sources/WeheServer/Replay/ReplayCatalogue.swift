package import Logging
package import WeheCore
package import WeheWire

/// One replay the server can play: the client trace (for UDP echo content and the request schedule) and the server
/// side (request groups and response bursts, or UDP datagrams).
package struct LoadedReplay: Sendable {
    /// The replay name the client declares, e.g. `Pandora-05132024`.
    package var name: String
    /// The client trace.
    package var client: ReplayTrace
    /// The server side.
    package var server: ServerTrace
    /// The slice of the recording this replay serves (`sliced(_:)`), when a client asked for one.
    package var slice: UDPSlice?
    /// Port tests replay without timing (protocol.md 6.1, 6.2 step 5).
    package var timed: Bool { !client.isPortTest }
    /// TCP or UDP.
    package var transport: TransportProtocol { client.transport }
    /// Timestamp of the first client packet (the schedule's origin offset).
    package var firstPacketTime: Double { client.packets.first?.timestamp ?? 0 }

    /// The number of UDP flows the server plays (the side channel's sender count): one per distinct
    /// (server port, client port); 0 for TCP replays.
    package var senderCount: Int {
        guard transport == .udp else { return 0 }
        return Set(server.udpFlows.map { "\($0.csPair.serverPort)/\($0.csPair.clientPort)" }).count
    }

    /// How many of a UDP flow's first client datagrams identify a replay of it (the reference server's look-up table
    /// keys UDP flows by the digests of their first 5 client datagrams, protocol.md 1.5).
    package static let udpOpeningCount = 5

    /// Whether this replay has a UDP flow to the recorded server port `serverPort`.
    package func hasUDPFlow(serverPort: Int) -> Bool {
        server.udpFlows.contains { Int($0.csPair.serverPort) == serverPort }
    }

    /// The UDP flow to `serverPort` whose first client datagrams (`udpOpeningCount` of them, empty ones left out)
    /// include `payload`: the flow a replay of this trace starts when a datagram with this content opens it. `nil`
    /// when no flow starts with it (e.g. a datagram from the end of an earlier replay).
    package func udpFlow(opening payload: some Collection<UInt8>, serverPort: Int) -> UDPServerFlow? {
        guard !payload.isEmpty else { return nil }
        for flow in server.udpFlows where Int(flow.csPair.serverPort) == serverPort {
            var seen = 0
            for packet in client.packets where packet.csPair == flow.csPair && !packet.payload.isEmpty {
                if packet.payload.elementsEqual(payload) { return flow }
                seen += 1
                if seen == Self.udpOpeningCount { break }
            }
        }
        return nil
    }

    /// The replay with `slice` applied to both sides (`UDPSlice`): the client trace, whose datagrams the server
    /// echoes when it has no recorded ones and which the server's flow look-up and byte checks read, and the recorded
    /// server datagrams. The opening datagrams stay, so a replay of the slice opens its flow as a whole replay does.
    /// - Throws: `ReplayServerError` `.protocolViolation` for a TCP replay or one of several UDP flows (each flow's
    ///   times count from its own first datagram, so one slice would cut them at different moments of the call).
    package func sliced(_ slice: UDPSlice) throws(ReplayServerError) -> LoadedReplay {
        guard transport == .udp, server.udpFlows.count == 1, client.flows.count == 1 else {
            throw ReplayServerError(
                .protocolViolation, "a Slice applies to a UDP replay of one flow; \(name) is not one")
        }
        var sliced = self
        sliced.client = client.slice(slice)
        sliced.server.udpFlows = server.udpFlows.map { flow in
            UDPServerFlow(csPair: flow.csPair, datagrams: flow.datagrams?.sliced(slice))
        }
        sliced.slice = slice
        return sliced
    }

    /// What the server sends on a UDP flow: the recorded server datagrams, or the client's own recorded datagrams of
    /// that flow with the client's timing (relative to the flow's first datagram) when the trace has none.
    package func udpSchedule(for flow: UDPServerFlow) -> [ServerDatagram] {
        if let recorded = flow.datagrams { return recorded }
        let packets = client.packets.filter { $0.csPair == flow.csPair }
        guard let first = packets.first?.timestamp else { return [] }
        return packets.map { ServerDatagram(offset: max(0, $0.timestamp - first), payload: $0.payload) }
    }
}

/// Every replay loaded from the replay directory, indexed by name, with the ports their flows use.
package struct ReplayCatalogue: Sendable {
    /// Replays by declared name.
    package private(set) var replays: [String: LoadedReplay] = [:]

    /// Creates a catalogue from already loaded replays (tests).
    package init(replays: [LoadedReplay]) {
        for replay in replays { self.replays[replay.name] = replay }
    }

    /// Loads every `*.pcap_client_all.json` of a directory. A file that cannot be read is skipped with a warning;
    /// a directory without any usable trace is an error.
    /// - Throws: `ReplayServerError` `.replayLoading`.
    package init(directory: String, logger: Logger) throws(ReplayServerError) {
        let library = ReplayLibrary(directory: directory)
        let files: [String]
        do {
            files = try library.clientTraceFiles()
        } catch {
            throw ReplayServerError(.replayLoading, "cannot list replay directory \(directory)", underlying: error)
        }
        for file in files {
            do {
                let trace = try library.trace(file: file)
                let problems = trace.problems()
                guard problems.isEmpty else {
                    logger.warning(
                        "replay skipped: invalid trace",
                        metadata: ["wehe.replay.file": "\(file)", "wehe.problem": "\(problems[0])"]
                    )
                    continue
                }
                let server = try library.serverTrace(for: file, client: trace)
                if replays[trace.name] != nil {
                    logger.warning("replay skipped: duplicate name", metadata: ["wehe.replay.file": "\(file)"])
                    continue
                }
                replays[trace.name] = LoadedReplay(name: trace.name, client: trace, server: server)
            } catch {
                logger.warning(
                    "replay skipped: unreadable trace",
                    metadata: ["wehe.replay.file": "\(file)", "wehe.error": "\(error)"]
                )
            }
        }
        guard !replays.isEmpty else {
            throw ReplayServerError(.replayLoading, "no usable replay trace in \(directory)")
        }
    }

    /// Looks up a replay by its declared name.
    package func replay(named name: String) -> LoadedReplay? { replays[name] }

    /// Recorded TCP server ports of every loaded replay, sorted.
    package var tcpPorts: [Int] {
        Set(replays.values.flatMap { $0.server.tcpFlows.map { Int($0.csPair.serverPort) } }).sorted()
    }

    /// Recorded UDP server ports of every loaded replay, sorted.
    package var udpPorts: [Int] {
        Set(replays.values.flatMap { $0.server.udpFlows.map { Int($0.csPair.serverPort) } }).sorted()
    }

    /// The port map sent to every client (protocol.md 5.4): every loaded flow's server address and five-digit port
    /// mapped to `["", <listening port>]`.
    package func portMap(tcpPort: (Int) -> Int?, udpPort: (Int) -> Int?) -> PortMap {
        var map = PortMap()
        for replay in replays.values {
            for flow in replay.server.tcpFlows {
                if let port = tcpPort(Int(flow.csPair.serverPort)) {
                    map.tcp[flow.csPair.serverAddress, default: [:]][flow.csPair.serverPortString] =
                        PortMap.Endpoint(port: port)
                }
            }
            for flow in replay.server.udpFlows {
                if let port = udpPort(Int(flow.csPair.serverPort)) {
                    map.udp[flow.csPair.serverAddress, default: [:]][flow.csPair.serverPortString] =
                        PortMap.Endpoint(port: port)
                }
            }
        }
        return map
    }

    /// The listening port for a recorded port under a fixed offset; a port pushed past 65535 (or below 1) wraps into
    /// 1024…65535 so that large offsets still give valid ports.
    package static func movedPort(_ port: Int, offset: Int) -> Int {
        let moved = port + offset
        if (1...65535).contains(moved) { return moved }
        let span = 65536 - 1024
        return ((moved - 1024) % span + span) % span + 1024
    }
}
