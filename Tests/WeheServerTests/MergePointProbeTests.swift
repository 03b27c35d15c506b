import Foundation
import Testing
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheServer

/// The merge-point prober's packet work on fixed bytes (checksums, copies, D-SACK, ICMP quotes, the BPF filter) and
/// its wiring: `getMeasurements` `mergePointProbes` between two servers and the `merge_point_queue` of `localize`.
@Suite("Merge-point probe (WeHeY's blind spot)", .timeLimit(.minutes(6)))
struct MergePointProbeTests {
    /// 198.18.2.2:443 → 198.18.1.2:50000, seq 0x11223344, PSH|ACK, timestamps, 12 bytes "hello wehey!"; the TCP
    /// checksum field holds 0x1234 (a partial sum, as a capture on a device with checksum offload shows it).
    static let segment: [UInt8] = [
        69, 0, 0, 64, 190, 239, 64, 0, 64, 6, 0, 0, 198, 18, 2, 2, 198, 18, 1, 2, 1, 187, 195, 80, 17, 34, 51, 68, 85,
        102, 119, 136, 128, 24, 1, 245, 18, 52, 0, 0, 1, 1, 8, 10, 0, 0, 3, 232, 0, 0, 7, 208, 104, 101, 108, 108, 111,
        32, 119, 101, 104, 101, 121, 33,
    ]
    /// Its copy with TTL 2 and IP id 0x0105, both checksums filled in (from the prototype's `tcp_checksum` and an
    /// IP header sum computed in Python).
    static let copy: [UInt8] = [
        69, 0, 0, 64, 1, 5, 64, 0, 2, 6, 232, 138, 198, 18, 2, 2, 198, 18, 1, 2, 1, 187, 195, 80, 17, 34, 51, 68, 85,
        102, 119, 136, 128, 24, 1, 245, 102, 148, 0, 0, 1, 1, 8, 10, 0, 0, 3, 232, 0, 0, 7, 208, 104, 101, 108, 108,
        111, 32, 119, 101, 104, 101, 121, 33,
    ]
    /// The client's duplicate ACK: NOP NOP timestamps, NOP NOP SACK 0x11223344-0x11223350 (the D-SACK).
    static let dsack: [UInt8] = [
        69, 0, 0, 64, 0, 1, 64, 0, 64, 6, 0, 0, 198, 18, 1, 2, 198, 18, 2, 2, 195, 80, 1, 187, 85, 102, 119, 136, 17,
        34, 51, 80, 176, 16, 1, 245, 0, 0, 0, 0, 1, 1, 8, 10, 0, 0, 7, 209, 0, 0, 3, 232, 1, 1, 5, 10, 17, 34, 51, 68,
        17, 34, 51, 80,
    ]
    /// Time exceeded from 198.18.3.1 quoting the copy's IP header and first 8 TCP bytes.
    static let timeExceededTCP: [UInt8] = [
        69, 192, 0, 56, 0, 7, 0, 0, 64, 1, 0, 0, 198, 18, 3, 1, 198, 18, 2, 2, 11, 0, 0, 0, 0, 0, 0, 0, 69, 0, 0, 64, 1,
        5, 64, 0, 2, 6, 232, 138, 198, 18, 2, 2, 198, 18, 1, 2, 1, 187, 195, 80, 17, 34, 51, 68,
    ]
    /// Time exceeded quoting a UDP datagram 40001 → 33435 to 198.18.1.2.
    static let timeExceededUDP: [UInt8] = [
        69, 192, 0, 56, 0, 7, 0, 0, 64, 1, 0, 0, 198, 18, 3, 1, 198, 18, 2, 2, 11, 0, 0, 0, 0, 0, 0, 0, 69, 0, 0, 39, 0,
        9, 64, 0, 1, 17, 0, 0, 198, 18, 2, 2, 198, 18, 1, 2, 156, 65, 130, 155, 0, 19, 0, 0,
    ]
    /// Port unreachable from the client quoting a UDP datagram 40001 → 33601.
    static let portUnreachable: [UInt8] = [
        69, 192, 0, 56, 0, 7, 0, 0, 64, 1, 0, 0, 198, 18, 1, 2, 198, 18, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 69, 0, 0, 39, 0,
        9, 64, 0, 64, 17, 0, 0, 198, 18, 2, 2, 198, 18, 1, 2, 156, 65, 131, 65, 0, 19, 0, 0,
    ]

    /// The receiver's check, written independently of the code under test: the one's-complement sum of the
    /// pseudo-header and the whole segment, checksum included, is 0xFFFF.
    static func tcpChecksumVerifies(_ packet: [UInt8]) -> Bool {
        let ihl = Int(packet[0] & 0x0F) * 4
        let total = Int(packet[2]) << 8 | Int(packet[3])
        let length = total - ihl
        var words = Array(packet[12..<20]) + [0, 6, UInt8(length >> 8), UInt8(length & 0xFF)]
        words += packet[ihl..<total]
        if words.count % 2 == 1 { words.append(0) }
        var sum = 0
        for index in stride(from: 0, to: words.count, by: 2) { sum += Int(words[index]) << 8 | Int(words[index + 1]) }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return sum == 0xFFFF
    }

    @Test("the TCP checksum of a captured segment is recomputed (the offload placeholder replaced)")
    func checksum() throws {
        #expect(MergePointPackets.tcpChecksum(Self.segment) == 0x6694)
        #expect(!Self.tcpChecksumVerifies(Self.segment))
        let copy = MergePointPackets.copy(of: Self.segment, ttl: 2, ipID: 0x0105)
        #expect(copy == Self.copy)
        #expect(Self.tcpChecksumVerifies(try #require(copy)))
        // The TTL and identification do not enter the TCP checksum; the IP header checksum follows them.
        let other = try #require(MergePointPackets.copy(of: Self.segment, ttl: 64, ipID: 0x0185))
        #expect(other[36..<38] == Self.copy[36..<38])
        #expect(other[8] == 64)
        #expect(other[10..<12] != Self.copy[10..<12])
        #expect(MergePointPackets.ipChecksum(other) == UInt16(other[10]) << 8 | UInt16(other[11]))
    }

    @Test("a super-packet longer than 1280 bytes is copied as its first 1280 bytes, lengths and checksum right")
    func longSegmentIsCut() throws {
        var long = Self.segment
        long += (0..<3000).map { UInt8($0 % 251) }
        let total = long.count
        long[2] = UInt8(total >> 8)
        long[3] = UInt8(total & 0xFF)
        let copy = try #require(MergePointPackets.copy(of: long, ttl: 2, ipID: 7))
        #expect(copy.count == 1280)
        #expect(Int(copy[2]) << 8 | Int(copy[3]) == 1280)
        #expect(Self.tcpChecksumVerifies(copy))
        #expect(MergePointPackets.tcpSegment(copy)?.sequence == 0x1122_3344)
        // A capture cut inside the bytes to copy cannot be copied; one without payload is no data segment.
        #expect(MergePointPackets.copy(of: Array(long[0..<600]), ttl: 2, ipID: 7) == nil)
        var bare = Array(Self.segment[0..<52])
        bare[3] = 52
        #expect(MergePointPackets.copy(of: bare, ttl: 2, ipID: 7) == nil)
    }

    @Test("segment fields, and the D-SACK's left edge in the client's duplicate ACK")
    func parsing() {
        let parsed = MergePointPackets.tcpSegment(Self.segment)
        #expect(parsed?.sourcePort == 443)
        #expect(parsed?.destinationPort == 50000)
        #expect(parsed?.sequence == 0x1122_3344)
        #expect(parsed?.payloadLength == 12)
        #expect(parsed?.ttl == 64)
        #expect(MergePointPackets.firstSACKLeftEdge(Self.dsack) == 0x1122_3344)
        // No SACK option (timestamps only), a SACK option running past the header, UDP: nothing.
        #expect(MergePointPackets.firstSACKLeftEdge(Self.segment) == nil)
        var broken = Self.dsack
        broken[55] = 30
        #expect(MergePointPackets.firstSACKLeftEdge(broken) == nil)
        var udp = Self.dsack
        udp[9] = 17
        #expect(MergePointPackets.tcpSegment(udp) == nil)
    }

    @Test("ICMP answers are matched by what they quote")
    func icmp() {
        #expect(
            MergePointPackets.icmpAnswer(Self.timeExceededTCP)
                == .tcpTimeExceeded(
                    ipID: 0x0105, sourcePort: 443, destinationPort: 50000, destination: [198, 18, 1, 2]))
        #expect(
            MergePointPackets.icmpAnswer(Self.timeExceededUDP)
                == .udpTimeExceeded(sourcePort: 40001, destinationPort: 33435, destination: [198, 18, 1, 2]))
        #expect(
            MergePointPackets.icmpAnswer(Self.portUnreachable)
                == .udpPortUnreachable(sourcePort: 40001, destinationPort: 33601, destination: [198, 18, 1, 2]))
        // Host unreachable (code 1), an echo reply, a quote cut short: not answers to probes.
        var host = Self.portUnreachable
        host[21] = 1
        #expect(MergePointPackets.icmpAnswer(host) == nil)
        var echo = Self.timeExceededTCP
        echo[20] = 0
        #expect(MergePointPackets.icmpAnswer(echo) == nil)
        #expect(MergePointPackets.icmpAnswer(Array(Self.timeExceededTCP[0..<50])) == nil)
    }

    /// A classic-BPF interpreter for the opcodes the filter uses (SOCK_DGRAM packet socket: offsets from the IP
    /// header); the snap length returned, 0 for a rejected packet.
    static func runFilter(_ program: [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)], _ packet: [UInt8]) -> UInt32 {
        var a: UInt32 = 0
        var x: UInt32 = 0
        var pc = 0
        func load(_ offset: Int, _ size: Int) -> UInt32? {
            guard offset >= 0, offset + size <= packet.count else { return nil }
            return packet[offset..<(offset + size)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        while pc < program.count {
            let instruction = program[pc]
            pc += 1
            switch instruction.code {
            case 0x30:
                guard let value = load(Int(instruction.k), 1) else { return 0 }
                a = value
            case 0x28:
                guard let value = load(Int(instruction.k), 2) else { return 0 }
                a = value
            case 0x20:
                guard let value = load(Int(instruction.k), 4) else { return 0 }
                a = value
            case 0x48:
                guard let value = load(Int(x) + Int(instruction.k), 2) else { return 0 }
                a = value
            case 0xB1:
                guard let value = load(Int(instruction.k), 1) else { return 0 }
                x = (value & 0x0F) * 4
            case 0x15: pc += Int(a == instruction.k ? instruction.jt : instruction.jf)
            case 0x06: return instruction.k
            default: return 0
            }
        }
        return 0
    }

    @Test("the BPF filter passes the connection's segments both ways and nothing else")
    func filter() {
        let program = MergePointProber.filterProgram(
            server: [198, 18, 2, 2], client: [198, 18, 1, 2], port: 443, snap: 1536)
        #expect(Self.runFilter(program, Self.segment) == 1536)
        #expect(Self.runFilter(program, Self.dsack) == 1536)
        var otherPort = Self.segment
        otherPort[21] = 188
        #expect(Self.runFilter(program, otherPort) == 0)
        var otherClient = Self.segment
        otherClient[19] = 3
        #expect(Self.runFilter(program, otherClient) == 0)
        var ackToOtherPort = Self.dsack
        ackToOtherPort[23] = 80
        #expect(Self.runFilter(program, ackToOtherPort) == 0)
        #expect(Self.runFilter(program, Self.timeExceededTCP) == 0)
    }

    @Test("a peer's mergePointProbes answer is read strictly")
    func peerAnswer() throws {
        let good = try JSONValue.parse(
            Array(
                #"{"mergeTTL":2,"flowToMergePoint":[0.001,null],"baselineToMergePoint":[0.0005],"flowToClient":[0.03],"baselineToClient":[]}"#
                    .utf8))
        let record = try #require(PeerMeasurements.mergePointProbes(good))
        #expect(record.mergeTTL == 2)
        #expect(record.flowToMergePoint == [0.001, nil])
        #expect(record.baselineToClient.isEmpty)
        for bad in [
            #"{"mergeTTL":2,"flowToMergePoint":[-1],"baselineToMergePoint":[],"flowToClient":[],"baselineToClient":[]}"#,
            #"{"mergeTTL":2,"flowToMergePoint":["x"],"baselineToMergePoint":[],"flowToClient":[],"baselineToClient":[]}"#,
            #"{"flowToMergePoint":[],"baselineToMergePoint":[],"flowToClient":[],"baselineToClient":[]}"#,
            #"{"mergeTTL":2,"flowToMergePoint":[],"baselineToMergePoint":[],"flowToClient":[]}"#,
        ] {
            #expect(PeerMeasurements.mergePointProbes(try JSONValue.parse(Array(bad.utf8))) == nil)
        }
        let tooMany = "[" + Array(repeating: "0.001", count: 1001).joined(separator: ",") + "]"
        let long = try JSONValue.parse(
            Array(
                #"{"mergeTTL":2,"flowToMergePoint":\#(tooMany),"baselineToMergePoint":[],"flowToClient":[],"baselineToClient":[]}"#
                    .utf8))
        #expect(PeerMeasurements.mergePointProbes(long) == nil)
    }

    // MARK: wiring

    /// Probes as a per-flow shaper on the shared segment leaves them: to the merge point the copies are as fast as
    /// the datagrams, to the client 30 ms slower (every 9th merge-point copy unanswered when `dropped`).
    static func sharedFlowProbes(branchQueue: Bool = false) -> MergePointProbeRecord {
        let flowCount = 14
        let baseCount = 7
        let flowMerge: [Double?] = (0..<flowCount).map { (index: Int) -> Double? in
            let step = Double(index)
            return branchQueue ? 0.030 + step * 0.001 : 0.0001 + Double(index % 5) * 0.00002
        }
        let baseMerge: [Double?] = (0..<baseCount).map { (index: Int) -> Double? in 0.0001 + Double(index % 4) * 0.00002
        }
        let flowPath: [Double?] = (0..<flowCount).map { (index: Int) -> Double? in 0.030 + Double(index) * 0.0015 }
        let basePath: [Double?] = (0..<baseCount).map { (index: Int) -> Double? in 0.0003 + Double(index) * 0.00005 }
        return MergePointProbeRecord(
            mergeTTL: 2, flowToMergePoint: flowMerge, baselineToMergePoint: baseMerge, flowToClient: flowPath,
            baselineToClient: basePath)
    }

    /// `LocalizationFleetTests.withPair` with the merge-point probe configured on server 1.
    static func withProbingPair(
        probing: Bool = true,
        _ body:
            @Sendable (_ first: ServerHarness.Running, _ second: ServerHarness.Running, _ port: Int) async throws
            -> Void
    ) async throws {
        let fleet = try LocalizationFleetTests.fleet()
        let files = try LocalizationFleetTests.certificates()
        let secondServer: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.bindAddress = "127.0.0.2"
            configuration.fleetAuthenticator = fleet
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.analyzerTLSPort = 0
        }
        try await ServerHarness.run(configure: secondServer) { second in
            let peerPort = try #require(second.ports.analyzerTLS)
            let asking = LocalizationFleetTests.askingPeer(port: peerPort, ca: files.caCertificate, fleet: fleet)
            try await ServerHarness.run(configure: { configuration in
                asking(&configuration)
                if probing { configuration.mergePointProbe = MergePointProbeSettings(mergeTTL: 2) }
            }) { first in
                try await body(first, second, try #require(first.ports.analyzerPlain))
            }
        }
    }

    static func localize(_ port: Int, user: String) async throws -> JSONValue {
        let queued = try await LocalizationFleetTests.request(
            port: port, method: "POST", target: "/Results",
            body: LocalizationFleetTests.localizeBody(user: user, first: 6, second: 7, single: 5))
        #expect(queued.body == #"{"success": true}"#)
        let answer = try await LocalizationFleetTests.request(
            port: port, target: "/Results?command=localizeResult&userID=\(user)&historyCounts=[6,%207]&testID=0")
        return try #require(try JSONValue.parse(Array(answer.body.utf8))["response"])
    }

    @Test("localize takes server 2's probes through getMeasurements: access network beside the published verdict")
    func sharedFlowThroughPeer() async throws {
        try await Self.withProbingPair { first, second, port in
            let user = "@wehey0201"
            try await LocalizationFleetTests.seedSharedPolicer(first, second, user: user)
            try #require(first.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: user, historyCount: 6, testID: 0))
            try #require(second.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: user, historyCount: 7, testID: 0))
            let response = try await Self.localize(port, user: user)
            // The published part as without the probe; ours beside it, outside localization_tests.
            #expect(
                response["localization_tests"]
                    == .array([.string("pairsum_vs_single_xput"), .string("loss_correlation")]))
            let queue = try #require(response["merge_point_queue"])
            #expect(queue["verdict"] == .string("access-network"))
            guard case .array(let branches)? = queue["branches"], branches.count == 2 else {
                Issue.record("branches missing: \(queue.serialized())")
                return
            }
            for branch in branches {
                #expect(branch["path"]?["significant"] == .bool(true))
                #expect(branch["mergePoint"]?["significant"] == .bool(false))
                #expect(branch["flowProbes"] == .number(14, text: "14"))
            }
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .accessNetwork)
            #expect(run.summary?.note == nil)
            let stored = try #require(run.summary?.mergePointQueue)
            #expect(stored.verdict == .accessNetwork)
            #expect((stored.second?.path?.extraDelay ?? 0) > 0.025)
        }
    }

    @Test("a queue before the merge point on one branch says no evidence; missing probes say inconclusive")
    func branchQueueAndMissingProbes() async throws {
        try await Self.withProbingPair { first, second, port in
            let user = "@wehey0202"
            try await LocalizationFleetTests.seedSharedPolicer(first, second, user: user)
            try #require(first.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: user, historyCount: 6, testID: 0))
            try #require(second.server.mergePointProbes).save(
                Self.sharedFlowProbes(branchQueue: true), for: ReplayKey(userID: user, historyCount: 7, testID: 0))
            let response = try await Self.localize(port, user: user)
            #expect(response["merge_point_queue"]?["verdict"] == .string("no-evidence"))

            let other = "@wehey0203"
            try await LocalizationFleetTests.seedSharedPolicer(first, second, user: other)
            try #require(first.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: other, historyCount: 6, testID: 0))
            let missing = try await Self.localize(port, user: other)
            let queue = try #require(missing["merge_point_queue"])
            #expect(queue["verdict"] == .string("inconclusive"))
            if case .array(let branches)? = queue["branches"] {
                #expect(branches.count == 2 && branches[0] != .null && branches[1] == .null)
            } else {
                Issue.record("branches missing: \(queue.serialized())")
            }
            guard case .string(let note)? = queue["note"] else {
                Issue.record("no note: \(queue.serialized())")
                return
            }
            #expect(note.contains("No merge-point probes for this replay"))
            // A replay too short for any probe: not measured, and the note says so.
            let short = "@wehey0205"
            try await LocalizationFleetTests.seedSharedPolicer(first, second, user: short)
            try #require(first.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: short, historyCount: 6, testID: 0))
            try #require(second.server.mergePointProbes).save(
                MergePointProbeRecord(mergeTTL: 2), for: ReplayKey(userID: short, historyCount: 7, testID: 0))
            let empty = try #require(try await Self.localize(port, user: short)["merge_point_queue"])
            #expect(empty["verdict"] == .string("inconclusive"))
            #expect(
                empty["note"] == .string("historyCount 7: too few probes (0 in-flow, 0 baseline to the merge point)"))
            // The published verdict is the shared policer's, whatever the probes say.
            let run = try #require(try await first.store.localization(userID: other, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .accessNetwork)
        }
    }

    @Test("without --merge-point-probe the localization has no merge_point_queue")
    func offByDefault() async throws {
        try await Self.withProbingPair(probing: false) { first, second, port in
            let user = "@wehey0204"
            try await LocalizationFleetTests.seedSharedPolicer(first, second, user: user)
            try #require(first.server.mergePointProbes).save(
                Self.sharedFlowProbes(), for: ReplayKey(userID: user, historyCount: 6, testID: 0))
            let response = try await Self.localize(port, user: user)
            #expect(response["merge_point_queue"] == nil)
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.mergePointQueue == nil)
        }
    }
}
