import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Settings of the merge-point probe (`wehe-server serve --merge-point-probe --merge-point-ttl N`).
package struct MergePointProbeSettings: Sendable, Hashable {
    /// Hop count from this server to the pair's merge point (the first router both servers' paths to the client
    /// share, from the pair's traceroutes).
    package var mergeTTL: Int
    /// Time between probes (1.05 s: routers rate-limit ICMP errors to about one per second per destination).
    package var period: Duration = .milliseconds(1050)
    /// A probe unanswered for this long counts as unanswered.
    package var timeout: Duration = .seconds(2)
    /// Longest probing of one replay; probing also stops when the replay ends.
    package var maximumDuration: Duration = .seconds(90)
    /// Most replays probed at once (further replays are not probed).
    package var maximumConcurrentProbers = 8
    /// Smallest payload of a segment worth copying.
    package var minimumPayload = 1000

    package init(mergeTTL: Int) {
        self.mergeTTL = mergeTTL
    }

    /// Checks the values.
    /// - Throws: `ReplayServerError` `.invalidConfiguration`.
    package func validated() throws(ReplayServerError) -> Self {
        guard (1...64).contains(mergeTTL) else {
            throw ReplayServerError(.invalidConfiguration, "merge-point TTL must lie in 1…64, got \(mergeTTL)")
        }
        return self
    }
}

/// Probes one TCP replay connection for WeHeY's blind spot ("design 2" of Docs/testbed.md): while
/// the server sends the replay, every `period` it sends copies of the connection's latest outgoing data segment,
/// one with the merge point's TTL (answered by ICMP time exceeded from the merge point) and one with the segment's
/// own TTL (a duplicate the client answers at once with a D-SACK), or, every third period, two UDP datagrams to the
/// client from this server's address: one with the merge point's TTL and one to a closed port (port unreachable).
/// The delays of the answers go to `MergePointQueueTest`.
///
/// Linux only, needs CAP_NET_RAW: an AF_PACKET socket (with a BPF filter on the connection's addresses and port)
/// sees the outgoing segments and the client's acknowledgements, a raw IP socket sends the copies (TCP checksum
/// recomputed), a raw ICMP socket reads the answers. Everything goes to the client of the replay and nowhere else;
/// the prober stops at `finish()`, at `maximumDuration`, and sends at most one probe pair per period.
package final class MergePointProber: Sendable {
    private struct State {
        var record: MergePointProbeRecord
        var finished = false
        var waiter: CheckedContinuation<MergePointProbeRecord, Never>?
    }

    private static let running = Atomic<Int>(0)

    private let settings: MergePointProbeSettings
    private let server: [UInt8]
    private let client: [UInt8]
    private let serverPort: UInt16
    private let clientPort: UInt16
    private let stopFlag = Atomic<Bool>(false)
    private let state: Mutex<State>

    /// Whether this platform can probe (Linux).
    static var isSupported: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    /// Checks at startup that the process may open the sockets the prober needs.
    /// - Throws: `ReplayServerError` `.invalidConfiguration` saying what is missing.
    package static func checkPrivileges() throws(ReplayServerError) {
        #if os(Linux)
            let packet = socket(AF_PACKET, Int32(SOCK_DGRAM.rawValue), Int32(Self.ethernetTypeAll.bigEndian))
            let raw = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_RAW))
            let icmp = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_ICMP))
            let failed = [packet, raw, icmp].contains(where: { $0 < 0 })
            let reason = String(cString: strerror(errno))
            for fd in [packet, raw, icmp] where fd >= 0 { close(fd) }
            if failed {
                throw ReplayServerError(
                    .invalidConfiguration,
                    "--merge-point-probe needs raw sockets (CAP_NET_RAW, e.g. setcap cap_net_raw+ep on the binary "
                        + "or root): \(reason)")
            }
        #else
            throw ReplayServerError(.invalidConfiguration, "--merge-point-probe works on Linux only")
        #endif
    }

    /// Starts probing the connection `server:serverPort` ↔ `client:clientPort` (IPv4 literals), or returns `nil`
    /// when it cannot (not IPv4, not Linux, sockets refused, too many probers running); `note` says why.
    static func start(
        server: String, serverPort: Int, client: String, clientPort: Int, settings: MergePointProbeSettings
    ) -> (prober: MergePointProber?, note: String?) {
        guard isSupported else { return (nil, "merge-point probe: not Linux") }
        guard let serverBytes = ipv4(server), let clientBytes = ipv4(client),
            let serverPort = UInt16(exactly: serverPort), let clientPort = UInt16(exactly: clientPort)
        else { return (nil, "merge-point probe: IPv4 only") }
        let (count, _) = running.add(1, ordering: .relaxed)
        guard count + 1 <= settings.maximumConcurrentProbers else {
            running.subtract(1, ordering: .relaxed)
            return (nil, "merge-point probe: \(settings.maximumConcurrentProbers) replays already probed")
        }
        let prober = MergePointProber(
            settings: settings, server: serverBytes, client: clientBytes, serverPort: serverPort,
            clientPort: clientPort)
        #if os(Linux)
            let thread = Thread { prober.loop() }
            thread.name = "merge-point-probe"
            thread.start()
        #endif
        return (prober, nil)
    }

    private init(
        settings: MergePointProbeSettings, server: [UInt8], client: [UInt8], serverPort: UInt16, clientPort: UInt16
    ) {
        self.settings = settings
        self.server = server
        self.client = client
        self.serverPort = serverPort
        self.clientPort = clientPort
        self.state = Mutex(State(record: MergePointProbeRecord(mergeTTL: settings.mergeTTL)))
    }

    /// Stops probing (within 50 ms) without waiting.
    func stop() { stopFlag.store(true, ordering: .relaxed) }

    /// Stops probing and returns the delays measured.
    func finish() async -> MergePointProbeRecord {
        stop()
        return await withCheckedContinuation { continuation in
            let done = state.withLock { state -> MergePointProbeRecord? in
                if state.finished { return state.record }
                state.waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    private func end(note: String?) {
        Self.running.subtract(1, ordering: .relaxed)
        let (waiter, record) = state.withLock { state in
            if let note, state.record.note == nil { state.record.note = note }
            state.finished = true
            defer { state.waiter = nil }
            return (state.waiter, state.record)
        }
        waiter?.resume(returning: record)
    }

    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }

    /// The classic BPF program for a packet socket of type SOCK_DGRAM (offsets from the IP header): IPv4 TCP from
    /// `server` to `client` with source port `port`, or from `client` to `server` with destination port `port`;
    /// the first `snap` bytes of each.
    static func filterProgram(server: [UInt8], client: [UInt8], port: UInt16, snap: UInt32)
        -> [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)]
    {
        func word(_ bytes: [UInt8]) -> UInt32 {
            UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        }
        let s = word(server)
        let c = word(client)
        let p = UInt32(port)
        let loadByte: UInt16 = 0x30  // BPF_LD|BPF_B|BPF_ABS
        let loadWord: UInt16 = 0x20  // BPF_LD|BPF_W|BPF_ABS
        let jumpEqual: UInt16 = 0x15  // BPF_JMP|BPF_JEQ|BPF_K
        let loadHeaderLength: UInt16 = 0xB1  // BPF_LDX|BPF_B|BPF_MSH: X = 4*([k]&0xf)
        let loadHalfIndexed: UInt16 = 0x48  // BPF_LD|BPF_H|BPF_IND
        let ret: UInt16 = 0x06  // BPF_RET|BPF_K
        return [
            (loadByte, 0, 0, 9),  // 0: protocol
            (jumpEqual, 0, 14, 6),  // 1: TCP, else reject (16)
            (loadWord, 0, 0, 12),  // 2: source address
            (jumpEqual, 0, 5, s),  // 3: from the server? else 9
            (loadWord, 0, 0, 16),  // 4: destination
            (jumpEqual, 0, 10, c),  // 5: to the client, else reject
            (loadHeaderLength, 0, 0, 0),  // 6
            (loadHalfIndexed, 0, 0, 0),  // 7: TCP source port
            (jumpEqual, 6, 7, p),  // 8: accept (15) / reject (16)
            (jumpEqual, 0, 6, c),  // 9: from the client? else reject
            (loadWord, 0, 0, 16),  // 10: destination
            (jumpEqual, 0, 4, s),  // 11: to the server, else reject
            (loadHeaderLength, 0, 0, 0),  // 12
            (loadHalfIndexed, 0, 0, 2),  // 13: TCP destination port
            (jumpEqual, 0, 1, p),  // 14: accept (15) / reject (16)
            (ret, 0, 0, snap),  // 15: accept
            (ret, 0, 0, 0),  // 16: reject
        ]
    }

    #if os(Linux)
        private enum Kind { case flow, base, flowPath, basePath }

        /// linux/if_ether.h, linux/if_packet.h, asm-generic/socket.h (not in the Glibc module).
        /// ETH_P_ALL: only packet sockets of this protocol see outgoing packets (the kernel hands them to
        /// `ptype_all` handlers alone); the BPF filter keeps the connection's IPv4 TCP segments.
        private static let ethernetTypeAll: UInt16 = 0x0003
        private static let packetHost: UInt8 = 0
        private static let packetOutgoing: UInt8 = 4
        private static let attachFilter: Int32 = 26

        /// struct sock_filter (linux/filter.h).
        private struct FilterInstruction {
            var code: UInt16
            var jt: UInt8
            var jf: UInt8
            var k: UInt32
        }

        /// struct sock_fprog.
        private struct FilterProgram {
            var length: UInt16
            var filter: UnsafeMutablePointer<FilterInstruction>?
        }

        private struct Pending {
            var kind: Kind
            var sent: ContinuousClock.Instant
        }

        private func loop() {
            var note: String?
            defer { end(note: note) }
            let snap: UInt32 = 1536
            let packet = socket(AF_PACKET, Int32(SOCK_DGRAM.rawValue), Int32(Self.ethernetTypeAll.bigEndian))
            let raw = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_RAW))
            let icmp = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_ICMP))
            let udpMerge = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            let udpPath = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            let sockets = [packet, raw, icmp, udpMerge, udpPath]
            defer { for fd in sockets where fd >= 0 { close(fd) } }
            guard !sockets.contains(where: { $0 < 0 }) else {
                note = "merge-point probe: sockets refused: \(String(cString: strerror(errno)))"
                return
            }
            // The filter first, then drain what arrived before it.
            var program = Self.filterProgram(server: server, client: client, port: serverPort, snap: snap).map {
                FilterInstruction(code: $0.code, jt: $0.jt, jf: $0.jf, k: $0.k)
            }
            let attached = program.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var fprog = FilterProgram(length: UInt16(buffer.count), filter: buffer.baseAddress)
                return setsockopt(
                    packet, SOL_SOCKET, Self.attachFilter, &fprog, socklen_t(MemoryLayout<FilterProgram>.size))
            }
            guard attached == 0 else {
                note = "merge-point probe: BPF filter refused: \(String(cString: strerror(errno)))"
                return
            }
            var ttl = Int32(settings.mergeTTL)
            _ = setsockopt(udpMerge, Int32(IPPROTO_IP), IP_TTL, &ttl, socklen_t(MemoryLayout<Int32>.size))
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = in_addr_t(
                UInt32(server[0]) | UInt32(server[1]) << 8 | UInt32(server[2]) << 16 | UInt32(server[3]) << 24)
            for fd in [udpMerge, udpPath] {
                var address = local
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard bound == 0 else {
                    note = "merge-point probe: cannot bind UDP to the server address"
                    return
                }
            }
            let mergePort = Self.localPort(udpMerge)
            let pathPort = Self.localPort(udpPath)
            var destination = local
            destination.sin_addr.s_addr = in_addr_t(
                UInt32(client[0]) | UInt32(client[1]) << 8 | UInt32(client[2]) << 16 | UInt32(client[3]) << 24)

            var buffer = [UInt8](repeating: 0, count: Int(snap))
            var latest: (time: ContinuousClock.Instant, packet: [UInt8])?
            var flowPending: [UInt16: Pending] = [:]
            var pathPending: [UInt32: Pending] = [:]
            var basePending: [UInt16: Pending] = [:]
            var basePathPending: [UInt16: Pending] = [:]
            let start = ContinuousClock.now
            var nextProbe = start + settings.period
            var turn = 0
            let identBase = UInt16.random(in: 0...0x7F) << 8
            var counter: UInt16 = 0

            func record(_ kind: Kind, _ delay: Double?) {
                state.withLock { state in
                    switch kind {
                    case .flow: state.record.flowToMergePoint.append(delay)
                    case .base: state.record.baselineToMergePoint.append(delay)
                    case .flowPath: state.record.flowToClient.append(delay)
                    case .basePath: state.record.baselineToClient.append(delay)
                    }
                }
            }
            func seconds(_ duration: Duration) -> Double {
                Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            }

            while !stopFlag.load(ordering: .relaxed) {
                let now = ContinuousClock.now
                if start.duration(to: now) > settings.maximumDuration {
                    note = "merge-point probe stopped at its time limit"
                    break
                }
                let wait = max(0, min(50, Int(seconds(now.duration(to: nextProbe)) * 1000)))
                var fds = [
                    pollfd(fd: packet, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: icmp, events: Int16(POLLIN), revents: 0),
                ]
                _ = poll(&fds, 2, Int32(wait))
                let arrival = ContinuousClock.now
                // Outgoing segments (the latest worth copying) and the client's D-SACKs.
                for _ in 0..<512 {
                    // struct sockaddr_ll: the packet type is the byte at offset 10.
                    var from = sockaddr_storage()
                    var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let count = buffer.withUnsafeMutableBytes { bytes in
                        withUnsafeMutablePointer(to: &from) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                recvfrom(packet, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &fromLength)
                            }
                        }
                    }
                    guard count > 0 else { break }
                    let packetType = withUnsafeBytes(of: &from) { $0[10] }
                    let bytes = Array(buffer[0..<count])
                    guard let segment = MergePointPackets.tcpSegment(bytes) else { continue }
                    if packetType == Self.packetOutgoing, segment.source == server,
                        segment.sourcePort == serverPort, segment.destinationPort == clientPort
                    {
                        if segment.payloadLength >= settings.minimumPayload { latest = (arrival, bytes) }
                    } else if packetType == Self.packetHost, segment.source == client,
                        segment.destinationPort == serverPort, segment.sourcePort == clientPort,
                        let edge = MergePointPackets.firstSACKLeftEdge(bytes), let sent = pathPending[edge]
                    {
                        pathPending[edge] = nil
                        record(.flowPath, seconds(sent.sent.duration(to: arrival)))
                    }
                }
                // ICMP answers.
                for _ in 0..<64 {
                    let count = buffer.withUnsafeMutableBytes {
                        recv(icmp, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                    }
                    guard count > 0 else { break }
                    guard let answer = MergePointPackets.icmpAnswer(Array(buffer[0..<count])) else { continue }
                    switch answer {
                    case .tcpTimeExceeded(let id, let sourcePort, let destinationPort, let to)
                    where to == client && sourcePort == serverPort && destinationPort == clientPort:
                        if let sent = flowPending.removeValue(forKey: id) {
                            record(.flow, seconds(sent.sent.duration(to: arrival)))
                        }
                    case .udpTimeExceeded(let sourcePort, let destinationPort, let to)
                    where to == client && sourcePort == mergePort:
                        if let sent = basePending.removeValue(forKey: destinationPort) {
                            record(.base, seconds(sent.sent.duration(to: arrival)))
                        }
                    case .udpPortUnreachable(let sourcePort, let destinationPort, let to)
                    where to == client && sourcePort == pathPort:
                        if let sent = basePathPending.removeValue(forKey: destinationPort) {
                            record(.basePath, seconds(sent.sent.duration(to: arrival)))
                        }
                    default: break
                    }
                }
                let now2 = ContinuousClock.now
                if now2 >= nextProbe {
                    nextProbe = now2 + settings.period
                    turn += 1
                    counter = (counter + 1) & 0xFF
                    let ipID = identBase | counter
                    if turn % 3 != 0 {
                        if let latest, latest.time.duration(to: now2) < .milliseconds(200) {
                            if let copy = MergePointPackets.copy(
                                of: latest.packet, ttl: UInt8(settings.mergeTTL), ipID: ipID),
                                send(raw: raw, copy, to: destination)
                            {
                                flowPending[ipID] = Pending(kind: .flow, sent: now2)
                            }
                            let ownTTL = latest.packet[8]
                            if let copy = MergePointPackets.copy(of: latest.packet, ttl: ownTTL, ipID: ipID ^ 0x80),
                                let segment = MergePointPackets.tcpSegment(copy), send(raw: raw, copy, to: destination)
                            {
                                pathPending[segment.sequence] = Pending(kind: .flowPath, sent: now2)
                            }
                        }
                    } else {
                        // Ports 33434… (merge point) and 33600… (closed ports of the client), each reused after 64
                        // turns (over three minutes), matched by port and by our sockets' source ports.
                        let round = UInt16((turn / 3) % 64)
                        if sendUDP(udpMerge, to: destination, port: 33434 + round) {
                            basePending[33434 + round] = Pending(kind: .base, sent: now2)
                        }
                        if sendUDP(udpPath, to: destination, port: 33600 + round) {
                            basePathPending[33600 + round] = Pending(kind: .basePath, sent: now2)
                        }
                    }
                }
                // Unanswered after the timeout: in-flow and out-of-flow probes alike are recorded as such.
                func expire<Key>(_ pending: inout [Key: Pending]) {
                    for (key, value) in pending where value.sent.duration(to: now2) > settings.timeout {
                        pending[key] = nil
                        record(value.kind, nil)
                    }
                }
                expire(&flowPending)
                expire(&pathPending)
                expire(&basePending)
                expire(&basePathPending)
            }
        }

        private func send(raw: Int32, _ bytes: [UInt8], to destination: sockaddr_in) -> Bool {
            var address = destination
            let sent = bytes.withUnsafeBytes { payload in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(
                            raw, payload.baseAddress, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            return sent == bytes.count
        }

        private func sendUDP(_ fd: Int32, to destination: sockaddr_in, port: UInt16) -> Bool {
            var address = destination
            address.sin_port = port.bigEndian
            let payload = Array("wehe-merge-point-probe".utf8)
            let sent = payload.withUnsafeBytes { bytes in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            return sent == payload.count
        }

        private static func localPort(_ fd: Int32) -> UInt16 {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return UInt16(bigEndian: address.sin_port)
        }
    #endif
}
