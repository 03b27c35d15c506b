import WeheCore

/// Looking at each flow (reassembly, what identifies it, redaction) and choosing the flows a test replays.
extension Recorder {
    /// Reassembles a flow, finds what identifies it, redacts cleartext secrets, and says whether it can be replayed.
    func analyse(_ flow: FlowTable.Flow, redactions: inout [RecordingReport.Redaction]) -> Candidate {
        let address = IPText.format(flow.serverAddress)
        var line = RecordingReport.Flow(
            number: flow.number, transport: flow.isTCP ? "tcp" : "udp",
            server: (flow.serverAddress.count == 16 ? "[\(address)]" : address) + ":\(flow.serverPort)",
            clientPort: Int(flow.clientPort), serverName: nil, host: nil, bytesUp: 0, bytesDown: 0, kept: true,
            dropReason: nil, notes: [], firstBytesHex: "", tlsRecordsUp: nil, tlsRecordsDown: nil)
        var runs: [(fromClient: Bool, chunks: [ReassembledStream.Chunk])] = []
        var events: [(fromClient: Bool, chunk: ReassembledStream.Chunk)] = []
        if flow.isTCP {
            let up = ReassembledStream(items: flow.items.filter(\.fromClient), syn: flow.clientSYN)
            let down = ReassembledStream(items: flow.items.filter { !$0.fromClient }, syn: flow.serverSYN)
            for (name, stream) in [("client", up), ("server", down)] {
                if stream.retransmissions > 0 {
                    line.notes.append("\(stream.retransmissions) \(name) retransmissions dropped")
                }
                if stream.overlapsTrimmed > 0 {
                    line.notes.append("\(stream.overlapsTrimmed) overlapping \(name) segments trimmed to new bytes")
                }
                if stream.reordered > 0 {
                    line.notes.append("\(stream.reordered) out-of-order \(name) segments put back in place")
                }
                if stream.missingBytes > 0 {
                    line.notes.append(
                        "\(stream.missingBytes) \(name) bytes missing from the capture (replayed without them)")
                }
            }
            events =
                up.chunks.map { (true, $0) } + down.chunks.map { (false, $0) }
            events.sort { a, b in
                a.chunk.time != b.chunk.time ? a.chunk.time < b.chunk.time : a.chunk.frame < b.chunk.frame
            }
        } else {
            events = flow.items.map {
                (
                    $0.fromClient,
                    ReassembledStream.Chunk(time: $0.time, frame: $0.frame, payload: $0.payload)
                )
            }
        }
        for event in events {
            if let last = runs.indices.last, runs[last].fromClient == event.fromClient {
                runs[last].chunks.append(event.chunk)
            } else {
                runs.append((event.fromClient, [event.chunk]))
            }
        }
        // Cleartext HTTP: cookies, Authorization and query values are replaced, each run as one message stream.
        var findings: [PayloadInspector.Finding] = []
        if flow.isTCP {
            for index in runs.indices {
                var joined = runs[index].chunks.flatMap(\.payload)
                let found = PayloadInspector.redactHTTP(&joined)
                guard !found.isEmpty else { continue }
                findings += found
                var offset = 0
                for chunk in runs[index].chunks.indices {
                    let count = runs[index].chunks[chunk].payload.count
                    runs[index].chunks[chunk].payload = Array(joined[offset..<(offset + count)])
                    offset += count
                }
            }
        }
        let firstUp = runs.first { $0.fromClient }.map { Array($0.chunks.flatMap(\.payload).prefix(65_536)) } ?? []
        let firstDown = runs.first { !$0.fromClient }.map { Array($0.chunks.flatMap(\.payload).prefix(65_536)) } ?? []
        line.serverName = PayloadInspector.serverName(inClientHello: firstUp)
        line.host = PayloadInspector.host(inHTTP: firstUp)
        if flow.isTCP {
            line.tlsRecordsUp = PayloadInspector.tlsRecordSizes(firstUp)
            line.tlsRecordsDown = line.tlsRecordsUp == nil ? nil : PayloadInspector.tlsRecordSizes(firstDown)
        }
        line.firstBytesHex = Self.hex(firstUp.prefix(32))
        line.bytesUp = runs.filter(\.fromClient).reduce(0) { $0 + $1.chunks.reduce(0) { $0 + $1.payload.count } }
        line.bytesDown = runs.filter { !$0.fromClient }.reduce(0) { $0 + $1.chunks.reduce(0) { $0 + $1.payload.count } }
        var kinds: [String: (count: Int, bytes: Int)] = [:]
        for finding in findings {
            kinds[finding.kind, default: (0, 0)].count += 1
            kinds[finding.kind, default: (0, 0)].bytes += finding.length
        }
        for (kind, value) in kinds.sorted(by: { $0.key < $1.key }) {
            redactions.append(
                RecordingReport.Redaction(flow: flow.number, kind: kind, count: value.count, bytes: value.bytes))
        }
        if runs.isEmpty {
            line.kept = false
            line.dropReason = "no payload"
        } else if runs[0].fromClient == false {
            line.kept = false
            line.dropReason =
                "the server speaks first (a replay server answers the client; it cannot open a stream)"
        } else if options.refuseIdentifying, !findings.isEmpty {
            line.kept = false
            line.dropReason =
                "cleartext " + kinds.keys.sorted().joined(separator: ", ") + " refused (--refuse-identifying)"
        }
        return Candidate(flow: flow, line: line, runs: runs)
    }

    /// Applies the user's choice (flows, ports, names, transport) and what our server can replay.
    func select(_ candidates: inout [Candidate], warnings: inout [String]) {
        func drop(_ index: Int, _ reason: String) {
            candidates[index].line.kept = false
            candidates[index].line.dropReason = reason
        }
        for index in candidates.indices where candidates[index].line.kept {
            let line = candidates[index].line
            if !options.flowNumbers.isEmpty, !options.flowNumbers.contains(line.number) {
                drop(index, "not in --flows")
            } else if !options.ports.isEmpty, !options.ports.contains(candidates[index].flow.serverPort) {
                drop(index, "server port \(candidates[index].flow.serverPort) not in --port")
            } else if !options.serverNames.isEmpty {
                let names = [line.serverName, line.host].compactMap { $0?.lowercased() }
                let wanted = options.serverNames.map { $0.lowercased() }
                let matches = names.contains { name in
                    wanted.contains { name == $0 || name.hasSuffix("." + $0) }
                }
                if !matches {
                    drop(
                        index,
                        names.isEmpty
                            ? "no server name (SNI or Host) to match --server-name"
                            : "server name \(names[0]) does not match --server-name")
                }
            }
        }
        // One transport per test: the user's, else the one carrying the most bytes.
        let live = candidates.indices.filter { candidates[$0].line.kept }
        let tcpBytes = live.filter { candidates[$0].flow.isTCP }.reduce(0) { $0 + candidates[$1].bytes }
        let udpBytes = live.filter { !candidates[$0].flow.isTCP }.reduce(0) { $0 + candidates[$1].bytes }
        let transport = options.transport ?? (tcpBytes >= udpBytes ? .tcp : .udp)
        for index in live where candidates[index].flow.isTCP != (transport == .tcp) {
            drop(
                index,
                "a test replays one transport: this one is \(transport.rawValue.uppercased())"
                    + (options.transport == nil ? " (most bytes; choose with --transport)" : ""))
        }
        // Two flows that start alike: a server that recognises flows by their first bytes could not tell them
        // apart (recording.md 3.5, 3.6). TCP: first 200 bytes; UDP: one of the first 5 datagrams to the same port.
        let remaining = candidates.indices.filter { candidates[$0].line.kept }
        // Each flow's opening, computed once: TCP its first 200 bytes, UDP its first 5 non-empty datagrams.
        var openings: [Int: [[UInt8]]] = [:]
        for index in remaining {
            let runs = candidates[index].runs
            if candidates[index].flow.isTCP {
                var prefix: [UInt8] = []
                for chunk in runs.first?.chunks ?? [] where prefix.count < 200 { prefix += chunk.payload.prefix(200) }
                openings[index] = [Array(prefix.prefix(200))]
            } else {
                openings[index] = Array(
                    runs.filter(\.fromClient).lazy.flatMap(\.chunks).map(\.payload).filter { !$0.isEmpty }.prefix(5))
            }
        }
        // Dictionaries of openings (not a comparison of every pair: a capture may hold thousands of flows).
        var alike = 0
        var tcpOpenings: [[UInt8]: Int] = [:]
        var udpOpenings: [UInt16: [[UInt8]: Int]] = [:]
        for index in remaining {
            let flow = candidates[index]
            if flow.flow.isTCP {
                guard let prefix = openings[index]?.first, !prefix.isEmpty else { continue }
                guard let earlier = tcpOpenings[prefix] else {
                    tcpOpenings[prefix] = index
                    continue
                }
                alike += 1
                if alike <= 5 {
                    warnings.append(
                        "flows #\(candidates[earlier].line.number) and #\(flow.line.number) start with the same "
                            + "bytes: a server could not tell them apart")
                }
            } else {
                let port = flow.flow.serverPort
                if let first = flow.runs.first(where: \.fromClient)?.chunks.first?.payload,
                    let earlier = udpOpenings[port]?[first]
                {
                    let number = candidates[earlier].line.number
                    drop(index, "starts like flow #\(number) to the same port: the server could not tell them apart")
                    alike += 1
                    if alike <= 5 {
                        warnings.append(
                            "flows #\(number) and #\(flow.line.number) start alike; #\(flow.line.number) dropped")
                    }
                    continue
                }
                for datagram in openings[index] ?? [] where udpOpenings[port]?[datagram] == nil {
                    udpOpenings[port, default: [:]][datagram] = index
                }
            }
        }
        if alike > 5 { warnings.append("\(alike - 5) more flows start like an earlier one") }
        // Our server replays one TCP connection per test: the largest stays.
        let tcp = candidates.indices.filter { candidates[$0].line.kept && candidates[$0].flow.isTCP }
        if let largest = tcp.max(by: { candidates[$0].bytes < candidates[$1].bytes }) {
            for index in tcp where index != largest {
                drop(
                    index,
                    "a TCP test replays one connection: #\(candidates[largest].line.number) carries more bytes "
                        + "(choose with --flows)")
            }
        }
    }
}
