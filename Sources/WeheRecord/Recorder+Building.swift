import WeheCore

/// Building the test from the flows a capture kept: the candidates, the chosen flows, the client trace, its control,
/// the server side, the catalog entry and the report.
extension Recorder {
    /// A flow after reassembly, with what the report says about it.
    struct Candidate {
        var flow: FlowTable.Flow
        var line: RecordingReport.Flow
        /// TCP: alternating runs (client first). UDP: datagrams in time order.
        var runs: [(fromClient: Bool, chunks: [ReassembledStream.Chunk])]
        var bytes: Int { line.bytesUp + line.bytesDown }
    }

    func build(_ sink: FrameSink) throws(WeheRecordError) -> Recording {
        let table = sink.table
        guard !table.flows.isEmpty else {
            throw WeheRecordError(
                .unusable,
                "no TCP or UDP packet to or from \(options.client) in \(sink.frames) frames: is --client the "
                    + "recording device's address as the capture shows it?")
        }
        var redactions: [RecordingReport.Redaction] = []
        var candidates = table.flows.map { analyse($0, redactions: &redactions) }
        var warnings: [String] = []
        select(&candidates, warnings: &warnings)
        let kept = candidates.filter(\.line.kept)
        guard let transport = kept.first.map({ $0.flow.isTCP ? TransportProtocol.tcp : .udp }) else {
            let reasons = candidates.map { "#\($0.line.number) \($0.line.dropReason ?? "")" }.prefix(8)
            throw WeheRecordError(
                .unusable, "no flow is left to replay: " + reasons.joined(separator: "; "))
        }
        // Timeline of the kept flows: idle gaps, optionally shortened.
        let times = kept.flatMap { $0.runs.flatMap { $0.chunks.map(\.time) } }.sorted()
        let origin = times.first ?? 0
        var gaps: [RecordingReport.Gap] = []
        var cuts: [(end: Double, removed: Double)] = []
        var removed = 0.0
        for (previous, next) in zip(times, times.dropFirst()) where next - previous > options.gapWarningSeconds {
            let length = next - previous
            var shortened: Double?
            if let limit = options.shortenGaps, length > limit {
                removed += length - limit
                cuts.append((next, removed))
                shortened = limit
            }
            gaps.append(RecordingReport.Gap(start: previous - origin, length: length, shortenedTo: shortened))
        }
        if let limit = options.shortenGaps, limit < options.gapWarningSeconds {
            // Gaps between the limit and the warning threshold are shortened too, without a report line.
            cuts = []
            removed = 0
            for (previous, next) in zip(times, times.dropFirst()) where next - previous > limit {
                removed += next - previous - limit
                cuts.append((next, removed))
            }
        }
        // Binary search of the last cut at or before a time: captures may hold many events and many gaps.
        let cutList = cuts
        func clock(_ time: Double) -> Double {
            var low = 0
            var high = cutList.count
            while low < high {
                let middle = (low + high) / 2
                if cutList[middle].end <= time { low = middle + 1 } else { high = middle }
            }
            let shift = low == 0 ? 0 : cutList[low - 1].removed
            return max(0, time - shift - origin)
        }
        let date = Self.dateStamp(sink.firstTime ?? origin)
        let stem = "\(options.id)_\(date)"
        let replayName = "\(options.id)-\(date)"
        let isIPv6 = IPText.parse(options.client)?.count == 16
        let rewritten = isIPv6 ? Self.rewrittenIPv6 : Self.rewrittenIPv4
        var packets: [ReplayPacket] = []
        var tcpFlows: [TCPServerFlow] = []
        var udpFlows: [UDPServerFlow] = []
        for candidate in kept {
            let pair = CSPair(
                clientAddress: rewritten, clientPort: candidate.flow.clientPort,
                serverAddress: IPText.format(candidate.flow.serverAddress), serverPort: candidate.flow.serverPort)
            if candidate.flow.isTCP {
                let (flowPackets, flow) = tcpTrace(candidate, pair: pair, clock: clock)
                packets += flowPackets
                tcpFlows.append(flow)
            } else {
                let (flowPackets, flow) = udpTrace(candidate, pair: pair, clock: clock)
                packets += flowPackets
                udpFlows.append(flow)
                if flow.datagrams?.isEmpty == true {
                    warnings.append(
                        "flow #\(candidate.line.number): the server sent nothing back; the test measures no download")
                }
            }
        }
        // The merged schedule: every flow's packets on the recorded clock (a stable sort keeps each flow's order).
        packets = packets.enumerated().sorted { a, b in
            a.element.timestamp != b.element.timestamp ? a.element.timestamp < b.element.timestamp : a.offset < b.offset
        }.map(\.element)
        let client = ReplayTrace(
            packets: packets,
            udpClientPorts: transport == .udp
                ? Array(Set(packets.map(\.csPair.clientPortString))).sorted() : [],
            tcpCSPairs: transport == .tcp ? tcpFlows.map(\.csPair.rawValue) : [],
            name: replayName)
        let server = ServerTrace(name: replayName, tcpFlows: tcpFlows, udpFlows: udpFlows)
        let generator = ControlTraceGenerator()
        var control = generator.control(of: client)
        var controlServer = server
        controlServer.name = control.name
        for flow in controlServer.tcpFlows.indices {
            for group in controlServer.tcpFlows[flow].groups.indices {
                controlServer.tcpFlows[flow].groups[group].segments = controlServer.tcpFlows[flow].groups[group]
                    .segments?.map { ServerSegment(offset: $0.offset, payload: generator.invert($0.payload)) }
            }
        }
        for flow in controlServer.udpFlows.indices {
            controlServer.udpFlows[flow].datagrams = controlServer.udpFlows[flow].datagrams?.map {
                ServerDatagram(offset: $0.offset, payload: generator.invert($0.payload))
            }
        }
        Self.rehash(&control, server: controlServer)
        let bytesUp = client.bytesUp
        let bytesDown =
            tcpFlows.reduce(0) { $0 + $1.responseBytes }
            + udpFlows.reduce(0) { $0 + ($1.datagrams ?? []).reduce(0) { $0 + $1.payload.count } }
        let lastServer = kept.flatMap { $0.runs.filter { !$0.fromClient }.flatMap { $0.chunks.map(\.time) } }.max()
        let replaySeconds = max(client.duration, lastServer.map(clock) ?? 0)
        if replaySeconds < 1 {
            warnings.append(
                "each replay lasts \(Self.format(replaySeconds)) s: too short to measure (a test needs several "
                    + "seconds of throughput samples); record a longer session")
        } else if bytesDown < 1_000_000 {
            warnings.append(
                "the server sends only \(bytesDown) bytes: on a fast path the replay is over in a fraction of a "
                    + "second and gives few throughput samples")
        }
        let entry = CatalogEntry(
            id: options.id, name: options.displayName ?? options.id, image: options.id, category: options.category,
            durationSeconds: max(1, replaySeconds.rounded(.up)),
            sizeMB: (Double(bytesUp + bytesDown) / 100_000).rounded(.up) / 10,
            originalFile: stem + ".pcap_client_all.json",
            controlFile: "\(options.id)Random_\(date).pcap_client_all.json")
        var skipped: [String: Int] = [:]
        for (reason, count) in sink.skipped { skipped[reason.rawValue] = count }
        let report = RecordingReport(
            testID: options.id, replayName: replayName, transport: transport.rawValue, frames: sink.frames,
            otherHostFrames: table.otherHosts, skippedFrames: skipped, clientAddress: options.client,
            clientRewrittenTo: rewritten, flows: candidates.map(\.line),
            redactions: redactions.filter { redaction in kept.contains { $0.line.number == redaction.flow } },
            gaps: gaps, gapThreshold: options.gapWarningSeconds, bytesUp: bytesUp, bytesDown: bytesDown,
            replaySeconds: replaySeconds, expectedTestSeconds: 2 * replaySeconds, warnings: warnings, files: [])
        return Recording(
            client: client, control: control, server: server, controlServer: controlServer, entry: entry,
            report: report, stem: stem, controlStem: "\(options.id)Random_\(date)")
    }
}
