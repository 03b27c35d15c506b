import Crypto
import WeheCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a capture into a Wehe test (Docs/recording.md): reads frames with libpcap, keeps the client's TCP and UDP
/// flows, puts TCP streams back in order, chooses flows, rewrites the recorder's address, redacts cleartext
/// secrets, builds the client trace, its control and the server side, and reports what it kept and why.
public struct Recorder: Sendable {
    /// The options.
    public var options: RecordingOptions

    /// Creates a recorder.
    public init(options: RecordingOptions) {
        self.options = options
    }

    /// The address the recorder's own address becomes in the test.
    static let rewrittenIPv4 = "10.0.0.1"
    static let rewrittenIPv6 = "fd00::1"
    /// A UDP client silent this long towards a server gets empty keep-alive datagrams (recording.md 3.6) …
    static let keepAliveSilence = 20.0
    /// … one every this many seconds.
    static let keepAliveInterval = 10.0

    /// Reads a pcap or pcapng file and makes the test.
    public func record(file path: String) throws(WeheRecordError) -> Recording {
        try validate()
        let library = try CaptureSource.load()
        let handle = try library.open(file: path)
        var reader = try FrameSink(options: options, linkType: handle.linkType)
        while true {
            switch try handle.next() {
            case .frame(let frame): try reader.add(frame)
            case .timeout: continue
            case .end: return try build(reader)
            }
        }
    }

    /// Captures live on `interface` (needs CAP_NET_RAW) for `seconds`, or until `stop` says so (checked at least
    /// every 200 ms: the command line's Ctrl-C), then reads what the kernel still holds from before the end, and
    /// makes the test.
    /// - Parameter opened: called once the interface is open and filtered: traffic from then on is recorded.
    public func record(
        interface: String, seconds: Double, opened: () -> Void = {}, stop: () -> Bool = { false }
    ) throws(WeheRecordError) -> Recording {
        try validate()
        let library = try CaptureSource.load()
        let handle = try library.open(interface: interface, timeoutMilliseconds: 200)
        // Only the client's packets (and the chosen ports' and transport's) enter the capture buffer: on a busy
        // interface other traffic would fill it and the kernel would drop frames, the large ones (the payloads)
        // first.
        try handle.filter(options.captureFilter)
        try handle.makeNonBlocking()
        var reader = try FrameSink(options: options, linkType: handle.linkType)
        opened()
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .milliseconds(Int64(seconds * 1000)))
        while clock.now < end, !stop() {
            if case .frame(let frame) = try handle.next() {
                try reader.add(frame)
            } else {
                _ = handle.waitReadable(milliseconds: 100)
            }
        }
        // Frames that arrived before the end but were not read yet belong to the recording: a busy machine reads
        // late, and libpcap hands frames over in blocks that the kernel releases only when full or after the
        // capture's timeout (200 ms). So reading goes on for three timeouts (600 ms) and stops early at the first
        // frame from after the end.
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let ended = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        let drainEnd = clock.now.advanced(by: .milliseconds(600))
        drain: while clock.now < drainEnd {
            switch try handle.next() {
            case .frame(let frame) where frame.time <= ended: try reader.add(frame)
            case .frame, .end: break drain
            case .timeout: _ = handle.waitReadable(milliseconds: 100)
            }
        }
        return try build(reader)
    }

    /// Makes the test from frames already read (the tests' and fuzzing's entry: no libpcap needed).
    public func record(frames: [CapturedFrame], linkType: Int32) throws(WeheRecordError) -> Recording {
        try validate()
        var reader = try FrameSink(options: options, linkType: linkType)
        for frame in frames { try reader.add(frame) }
        return try build(reader)
    }

    private func validate() throws(WeheRecordError) {
        guard (1...40).contains(options.id.count), options.id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else {
            throw WeheRecordError(.unusable, "the test id '\(options.id.prefix(48))' must be 1-40 letters or digits")
        }
        guard IPText.parse(options.client) != nil else {
            throw WeheRecordError(.unusable, "--client '\(options.client.prefix(48))' is not an IPv4 or IPv6 address")
        }
        if let shorten = options.shortenGaps, !(shorten.isFinite && shorten >= 0.1) {
            throw WeheRecordError(.unusable, "--shorten-gaps takes seconds, at least 0.1")
        }
    }

    /// Frames in, flows out.
    struct FrameSink {
        var table: FlowTable
        let decoder: PacketDecoder
        var frames = 0
        var skipped: [SkippedFrame: Int] = [:]
        var firstTime: Double?

        init(options: RecordingOptions, linkType: Int32) throws(WeheRecordError) {
            guard PacketDecoder.supports(linkType) else {
                throw WeheRecordError(
                    .malformed,
                    "the capture's link type \(linkType) is not one we read (Ethernet, Linux cooked, raw IP, "
                        + "loopback): capture on another interface or convert it with editcap")
            }
            table = FlowTable(client: IPText.parse(options.client) ?? [], byteLimit: options.byteLimit)
            decoder = PacketDecoder(linkType: linkType)
        }

        mutating func add(_ frame: CapturedFrame) throws(WeheRecordError) {
            frames += 1
            if firstTime == nil { firstTime = frame.time }
            switch decoder.decode(frame) {
            case .success(let packet): try table.add(packet, frame: frames)
            case .failure(let reason): skipped[reason, default: 0] += 1
            }
        }
    }

    // MARK: - Building the test

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

    /// Client packets and the server side of one TCP flow (recording.md 3.4).
    func tcpTrace(_ candidate: Candidate, pair: CSPair, clock: (Double) -> Double) -> ([ReplayPacket], TCPServerFlow) {
        var packets: [ReplayPacket] = []
        var groups: [ResponseGroup] = []
        var previous = 0.0
        let runs = candidate.runs
        var index = 0
        while index < runs.count {
            let request = runs[index]
            let response = index + 1 < runs.count ? runs[index + 1] : nil
            let responseBytes = response.map { $0.chunks.flatMap(\.payload) } ?? []
            let hash = responseBytes.isEmpty ? nil : Self.hex(Insecure.SHA1.hash(data: responseBytes))
            var requestLength = 0
            for (position, chunk) in request.chunks.enumerated() {
                let time = max(previous, clock(chunk.time))
                previous = time
                requestLength += chunk.payload.count
                let last = position == request.chunks.count - 1
                packets.append(
                    ReplayPacket(
                        csPair: pair, payload: chunk.payload, timestamp: time,
                        kind: .tcp(
                            responseLength: last ? responseBytes.count : 0, responseHash: last ? hash : nil)))
            }
            let firstResponse = response?.chunks.first.map { clock($0.time) } ?? 0
            groups.append(
                ResponseGroup(
                    requestLength: requestLength, responseLength: responseBytes.count, requestTime: previous,
                    segments: response.map { run in
                        run.chunks.map {
                            ServerSegment(offset: max(0, clock($0.time) - firstResponse), payload: $0.payload)
                        }
                    }))
            index += 2
        }
        return (packets, TCPServerFlow(csPair: pair, groups: groups))
    }

    /// Client datagrams (with keep-alives in long silences) and the recorded server datagrams of one UDP flow.
    func udpTrace(_ candidate: Candidate, pair: CSPair, clock: (Double) -> Double) -> ([ReplayPacket], UDPServerFlow) {
        var packets: [ReplayPacket] = []
        var datagrams: [ServerDatagram] = []
        var firstServer: Double?
        var lastClient: Double?
        for run in candidate.runs {
            for chunk in run.chunks {
                let time = clock(chunk.time)
                if run.fromClient {
                    if let last = lastClient, time - last >= Self.keepAliveSilence {
                        var keepAlive = last + Self.keepAliveInterval
                        while keepAlive < time {
                            packets.append(
                                ReplayPacket(csPair: pair, payload: [], timestamp: keepAlive, kind: .udp(end: false)))
                            keepAlive += Self.keepAliveInterval
                        }
                    }
                    lastClient = time
                    packets.append(
                        ReplayPacket(csPair: pair, payload: chunk.payload, timestamp: time, kind: .udp(end: false)))
                } else {
                    let origin = firstServer ?? time
                    firstServer = origin
                    datagrams.append(ServerDatagram(offset: max(0, time - origin), payload: chunk.payload))
                }
            }
        }
        return (packets, UDPServerFlow(csPair: pair, datagrams: datagrams))
    }

    /// Recomputes the response hashes of a control trace from its (inverted) server side.
    static func rehash(_ trace: inout ReplayTrace, server: ServerTrace) {
        var groups: [CSPair: [ResponseGroup]] = [:]
        for flow in server.tcpFlows { groups[flow.csPair] = flow.groups.filter { $0.responseLength > 0 } }
        var used: [CSPair: Int] = [:]
        for index in trace.packets.indices {
            guard case .tcp(let length, _) = trace.packets[index].kind, length > 0 else { continue }
            let pair = trace.packets[index].csPair
            let position = used[pair, default: 0]
            used[pair] = position + 1
            guard let group = groups[pair]?[safe: position], let segments = group.segments else { continue }
            let bytes = segments.flatMap(\.payload)
            trace.packets[index].kind = .tcp(responseLength: length, responseHash: hex(Insecure.SHA1.hash(data: bytes)))
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `MMDDYYYY` (UTC) of a time since 1970, as the published trace names carry their recording date.
    static func dateStamp(_ time: Double) -> String {
        let days = Int((time / 86_400).rounded(.down))
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return two(month) + two(day) + String(year)
    }

    static func format(_ value: Double) -> String {
        let scaled = (value * 100).rounded() / 100
        return "\(scaled)"
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
