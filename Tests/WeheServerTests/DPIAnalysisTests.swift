import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheStoreSQL
import WeheTestKit
import WeheWire

/// The analyzer's DPI commands (analysis.md 5.2-5.4, wire format `DPIMessages`), driven over HTTP against a server
/// whose replay directory holds synthetic traces with the packet sizes of the §8.4 vectors. A simulated classifier
/// (the oracle) answers each probe: the classification breaks iff the probe's region overlaps a keyword byte.
///
/// The time limit only catches a hang: D6's 200 probes take about 4 s alone and took 218 s in a loaded full parallel
/// run, so it is 10 minutes.
@Suite("DPI search commands (DPIanalysis, DPIrule, DPIreset)", .timeLimit(.minutes(10)))
struct DPIAnalysisTests {
    static let user = "@dpiuser01"
    static let carrier = "Test Mobile"

    /// One packet of a synthetic trace: a client payload (with the server packets answering it).
    struct TracePacket {
        var length: Int
        var responses: [Int] = []
    }

    /// Byte `index` of client packet `number` (printable, so rules read as text).
    static func clientByte(_ index: Int, packet number: Int) -> UInt8 {
        UInt8(ascii: "a") + UInt8((index + number * 3) % 26)
    }

    /// Writes a replay `name` (e.g. `DPIVec-11212026`) into `directory`: one TCP flow, the client packets in order
    /// one second apart, each followed by its recorded response segments.
    static func writeReplay(_ name: String, packets: [TracePacket], into directory: String) throws {
        let template = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let pair = template.packets[0].csPair
        var trace = template
        trace.name = name
        trace.packets = packets.enumerated().map { number, packet in
            let total = packet.responses.reduce(0, +)
            return ReplayPacket(
                csPair: pair, payload: (0..<packet.length).map { clientByte($0, packet: number + 1) },
                timestamp: Double(number),
                kind: .tcp(responseLength: total, responseHash: total > 0 ? String(repeating: "0", count: 40) : nil))
        }
        let base = name.replacingOccurrences(of: "-", with: "_")
        try ClientTraceEncoder().encode(trace).write(
            toFile: directory + "/\(base).pcap_client_all.json", atomically: true, encoding: .utf8)
        var server = ServerTrace(derivingFrom: trace)
        var group = 0
        for packet in packets where !packet.responses.isEmpty {
            server.tcpFlows[0].groups[group].segments = packet.responses.enumerated().map { index, length in
                ServerSegment(
                    offset: Double(index) * 0.01,
                    payload: (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ 0x41 &+ index) })
            }
            group += 1
        }
        try ServerTraceCodec().encode(server).write(
            toFile: directory + "/\(base).wehe_server.json", atomically: true, encoding: .utf8)
    }

    /// A replay directory with the §8.4 traces: `DPIVec` (C_1 230 B, S_1 751 B, S_2 182 B), `DPITwelve` (12 client
    /// packets of 300 B), `DPIBig` (one 1500-B packet) and `DPITiny` (one 8-byte packet, nothing to probe).
    static func vectorDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("wehe-dpi-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try writeReplay("DPIVec-11212026", packets: [TracePacket(length: 230, responses: [751, 182])], into: directory)
        try writeReplay(
            "DPITwelve-11212026", packets: Array(repeating: TracePacket(length: 300), count: 12), into: directory)
        try writeReplay("DPIBig-11212026", packets: [TracePacket(length: 1500)], into: directory)
        try writeReplay("DPITiny-11212026", packets: [TracePacket(length: 8)], into: directory)
        return directory
    }

    static func key(_ replay: String, user: String = user) -> DPISearchKey {
        DPISearchKey(userID: user, carrierName: carrier, replayName: replay)
    }

    static func post(_ port: Int, _ pairs: [(String, String)]) async throws -> String {
        try await HTTPProbe.request(port: port, method: "POST", path: "/Results", body: FormParameters.encode(pairs))
    }

    static func parse(_ body: String) throws -> Result<DPIAnalysisResponse, AnalyzerFailure> {
        try DPIAnalysisResponse.parse(Array(body.utf8))
    }

    /// A keyword: a byte range of one packet.
    struct Keyword {
        var packet: String
        var bytes: Range<Int>
    }

    /// The oracle of §8.4: inverting any keyword byte breaks the classification (`every` = every flip breaks it).
    static func breaks(_ probe: DPIProbeMessage, keywords: [Keyword], every: Bool = false) -> Bool {
        every
            || keywords.contains {
                $0.packet == probe.testPacket && $0.bytes.overlaps(probe.testRegionLeft..<probe.testRegionRight)
            }
    }

    /// Runs a whole search through the API; returns the probes handed out and the final answer.
    /// A search follows a stored test with differentiation, and each report a stored probe replay
    /// (`StoredTestLimitsTests`): `store` gets them as the search goes.
    static func search(
        port: Int, store: any ResultStore, replay: String, keywords: [Keyword], every: Bool = false,
        probeBytes: Int? = nil, limit: Int = 400, user: String = user
    ) async throws -> (probes: [DPIProbeMessage], outcome: DPIAnalysisResponse) {
        let key = key(replay, user: user)
        try await StoredTestLimitsTests.seedIfMissing(store, user: user, replay: replay)
        var answer = try parse(
            try await post(port, DPIAnalysisRequest.currentProbe(key: key, historyCount: 1, testID: 2).formPairs)
        ).get()
        var probes: [DPIProbeMessage] = []
        var testID = 2
        while case .probe(let probe) = answer, probes.count < limit {
            probes.append(probe)
            try await StoredTestLimitsTests.seedIfMissing(store, user: user, replay: replay, probe: testID)
            let report = DPIAnalysisRequest(
                key: key, historyCount: 1, testID: testID, testedLeft: probe.testRegionLeft,
                testedRight: probe.testRegionRight, diff: breaks(probe, keywords: keywords, every: every),
                testedPacket: probe.testPacket, probeBytes: probeBytes)
            answer = try parse(try await post(port, report.formPairs)).get()
            testID += 1
        }
        return (probes, answer)
    }

    static func rules(_ answer: DPIAnalysisResponse) -> [DPIRuleMessage] {
        if case .rules(let found) = answer { return found.rules }
        return []
    }

    static func noRule(_ answer: DPIAnalysisResponse) -> DPINoRuleMessage? {
        if case .noRule(let none) = answer { return none }
        return nil
    }

    // MARK: §8.4 vectors

    @Test("D1: C_1[100,108) is found in 27 probes, the full run (the reference drops byte 100)")
    func d1() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIVec-11212026",
                keywords: [Keyword(packet: "C_1", bytes: 100..<108)],
                probeBytes: 1000)
            #expect(probes.count == 27)
            let opening = probes.prefix(7).map { "\($0.testPacket)[\($0.testRegionLeft),\($0.testRegionRight))" }
            #expect(
                opening == [
                    "C_1[10,230)", "C_1[10,120)", "C_1[120,230)", "C_1[10,65)", "C_1[65,120)", "C_1[65,92)",
                    "C_1[92,120)",
                ])
            #expect(probes.first?.packetLength == 230)
            let singles = probes.suffix(10).map(\.testRegionLeft)
            #expect(singles == Array(99...108))
            let rule = try #require(Self.rules(outcome).first)
            #expect(Self.rules(outcome).count == 1)
            #expect(rule.packet == "C_1" && rule.left == 100 && rule.right == 108)
            let expected = (100..<108).map { Self.clientByte($0, packet: 1) }
            #expect(rule.bytes == expected)
            #expect(rule.matchingBytes == Array(100..<108))
            guard case .rules(let found) = outcome else { return }
            #expect(found.numTests == 27)
            #expect(found.bytesUsed == 27_000)
            // DPIrule answers the same outcome; the search state is gone, so a new search may start.
            let cached = try Self.parse(
                try await Self.post(port, Self.key("DPIVec-11212026").formPairs(command: DPIMessages.ruleCommand)))
            #expect(try cached.get() == outcome)
            let stored = try await server.store.dpiResults(DPIResultQuery(userID: Self.user))
            #expect(stored.count == 1)
            #expect(stored.first?.rules.first?.content == expected)
            #expect(stored.first?.rules.first?.packetPayload?.count == 230)
            #expect(
                try await server.store.dpiSearch(
                    DPISearchID(
                        userID: Self.user, carrierName: Self.carrier, replayName: "DPIVec-11212026")) == nil)
        }
    }

    @Test("D2: a single matching byte C_1[100] is found in 16 probes (the reference fails with an index error)")
    func d2() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIVec-11212026",
                keywords: [Keyword(packet: "C_1", bytes: 100..<101)])
            #expect(probes.count == 16)
            let rule = try #require(Self.rules(outcome).first)
            #expect(rule.left == 100 && rule.right == 101)
        }
    }

    @Test("D3: a keyword in S_1[40,52) is found in 39 probes after C_1 answers F")
    func d3() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIVec-11212026",
                keywords: [Keyword(packet: "S_1", bytes: 40..<52)])
            #expect(probes.count == 39)
            #expect(probes.first?.testPacket == "C_1")
            #expect(
                probes.dropFirst().first.map { "\($0.testPacket) \($0.testRegionLeft) \($0.packetLength)" }
                    == "S_1 10 751")
            let rule = try #require(Self.rules(outcome).first)
            #expect(rule.packet == "S_1" && rule.left == 40 && rule.right == 52)
            // The server trace's recorded bytes of S_1 (segment 0: byte i is i + 0x41).
            #expect(rule.bytes == (40..<52).map { UInt8($0 + 0x41) })
        }
    }

    @Test("D4: a keyword inside the untouched first 10 bytes ends with 'no rule' after 3 probes (packets exhausted)")
    func d4() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIVec-11212026",
                keywords: [Keyword(packet: "C_1", bytes: 2..<8)])
            #expect(probes.map(\.testPacket) == ["C_1", "S_1", "S_2"])
            let none = try #require(Self.noRule(outcome))
            #expect(none.reason == .packetsExhausted)
            #expect(none.numTests == 3)
        }
    }

    @Test("D5: no classifier, 12 packets of 300 B: 'NO DPI for first 10 pacs' after 10 probes")
    func d5() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPITwelve-11212026", keywords: [])
            #expect(probes.count == 10)
            let none = try #require(Self.noRule(outcome))
            #expect(none.reason == .noDPIInFirstPackets)
            #expect(none.message == "NO DPI for first 10 pacs")
        }
    }

    @Test("D6: every flip breaks the classification: 'NO DPI after 200 tests'")
    func d6() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 201 requests at once: a real client runs a replay per probe, so the allowances (per user 60 at once, then
        // 30 a minute; per network 120, then 60) pace it; here the search itself is under test.
        let configure: (inout ReplayServerConfiguration) -> Void = {
            $0.limits.dpiRequestsPerUserPerMinute = 200
            $0.limits.dpiRequestsPerNetworkPerMinute = 200
        }
        try await ServerHarness.run(replays: directory, configure: configure) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIBig-11212026", keywords: [], every: true)
            #expect(probes.count == 200)
            let none = try #require(Self.noRule(outcome))
            #expect(none.reason == .probeLimitReached)
            #expect(none.message == "NO DPI after 200 tests")
            #expect(none.numTests == 200)
        }
    }

    @Test("D7: two required keywords C_1[20,24) and C_1[200,206): 51 probes, the longest run 200-205 reported")
    func d7() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPIVec-11212026",
                keywords: [Keyword(packet: "C_1", bytes: 20..<24), Keyword(packet: "C_1", bytes: 200..<206)])
            #expect(probes.count == 51)
            let rule = try #require(Self.rules(outcome).first)
            #expect(rule.left == 200 && rule.right == 206)
            #expect(rule.matchingBytes == Array(20..<24) + Array(200..<206))
        }
    }

    @Test("a trace with no packet longer than the untouched 10 bytes ends at once with noProbeablePacket")
    func nothingToProbe() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let (probes, outcome) = try await Self.search(
                port: port, store: server.store, replay: "DPITiny-11212026", keywords: [])
            #expect(probes.isEmpty)
            #expect(Self.noRule(outcome)?.reason == .noProbeablePacket)
        }
    }

    // MARK: bad input and protocol errors

    @Test("bad input is refused with a code and changes nothing")
    func badInput() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            func code(_ pairs: [(String, String)]) async throws -> DPIErrorCode? {
                let body = try await Self.post(port, pairs)
                #expect(body.hasPrefix(#"{"success": false"#), "\(body)")
                return DPIAnalysisResponse.errorCode(Array(body.utf8))
            }
            let key = Self.key("DPIVec-11212026")
            let ask = DPIAnalysisRequest.currentProbe(key: key, historyCount: 1, testID: 2)
            try await StoredTestLimitsTests.seedIfMissing(
                server.store, user: Self.user, replay: "DPIVec-11212026", probe: 2)
            // Unknown replay.
            #expect(
                try await code(
                    DPIAnalysisRequest.currentProbe(key: Self.key("Nope-1"), historyCount: 1, testID: 2).formPairs)
                    == .unknownReplay)
            // Diff before any probe was handed out.
            var report = DPIAnalysisRequest(
                key: key, historyCount: 1, testID: 2, testedLeft: 10, testedRight: 230, diff: true)
            #expect(try await code(report.formPairs) == .noProbeOutstanding)
            // Non-numeric and malformed fields.
            var pairs = ask.formPairs
            pairs[4] = ("historyCount", "abc")
            #expect(try await code(pairs) == .invalidParameter)
            pairs = report.formPairs
            pairs[6] = ("testedLeft", "ten")
            #expect(try await code(pairs) == .invalidParameter)
            pairs = report.formPairs
            pairs[8] = ("diff", "maybe")
            #expect(try await code(pairs) == .invalidParameter)
            #expect(try await code(Array(report.formPairs.prefix(3))) == .invalidParameter)
            pairs = ask.formPairs
            pairs[1] = ("userID", "bad/user")
            #expect(try await code(pairs) == .invalidParameter)
            #expect(try await code([("command", DPIMessages.ruleCommand), ("userID", Self.user)]) == .invalidParameter)
            // Start a search; mismatched reports are refused and leave the probe in place.
            let first = try Self.parse(try await Self.post(port, ask.formPairs)).get()
            guard case .probe(let probe) = first else {
                Issue.record("no first probe: \(first)")
                return
            }
            #expect(probe.testPacket == "C_1" && probe.testRegionLeft == 10 && probe.testRegionRight == 230)
            report = DPIAnalysisRequest(
                key: key, historyCount: 1, testID: 2, testedLeft: 10, testedRight: 120, diff: true)
            #expect(try await code(report.formPairs) == .regionMismatch)
            report.testedRight = 230
            report.testedPacket = "S_1"
            #expect(try await code(report.formPairs) == .regionMismatch)
            report.testedPacket = "C_1"
            report.testID = 1
            #expect(try await code(report.formPairs) == .invalidParameter)
            let again = try Self.parse(try await Self.post(port, ask.formPairs)).get()
            #expect(again == first)
            // Reset mid-search: the state goes, a report is then refused, and -1/-1 starts over.
            let reset = try await Self.post(port, key.formPairs(command: DPIMessages.resetCommand))
            #expect(reset == #"{"success": true, "response": {"reset": true}}"#)
            let resetAgain = try await Self.post(port, key.formPairs(command: DPIMessages.resetCommand))
            #expect(resetAgain == #"{"success": true, "response": {"reset": false}}"#)
            report.testID = 2
            #expect(try await code(report.formPairs) == .noProbeOutstanding)
            #expect(try Self.parse(try await Self.post(port, ask.formPairs)).get() == first)
            // No finished search yet: DPIrule has nothing.
            let rule = try await Self.post(port, key.formPairs(command: DPIMessages.ruleCommand))
            #expect(rule == #"{"success": false, "error": "No result found"}"#)
        }
    }

    @Test("without probeBytes, a probe whose replay the store holds costs one full replay of the trace")
    func bytesFromServedReplays() async throws {
        let directory = try Self.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let key = Self.key("DPIVec-11212026")
            try await StoredTestLimitsTests.seedTest(
                server.store, user: Self.user, historyCount: 7, replay: "DPIVec-11212026")
            _ = try await Self.post(
                port, DPIAnalysisRequest.currentProbe(key: key, historyCount: 7, testID: 2).formPairs)
            try await server.store.save(
                replay: ReplayRecord(
                    key: ReplayKey(userID: Self.user, historyCount: 7, testID: 2), replayName: "DPIVec-11212026",
                    samples: ThroughputSeries(mbps: [1, 2, 3], interval: 0.1), receivedAt: Date()),
                metadata: TestMetadata(replayName: "DPIVec-11212026", startedAt: Date()))
            let report = DPIAnalysisRequest(
                key: key, historyCount: 7, testID: 2, testedLeft: 10, testedRight: 230, diff: true)
            let next = try Self.parse(try await Self.post(port, report.formPairs)).get()
            guard case .probe(let probe) = next else {
                Issue.record("expected a second probe: \(next)")
                return
            }
            #expect(probe.numTests == 1)
            #expect(probe.bytesUsed == 230 + 751 + 182)
            // A probe whose replay never reached the store is refused (it did not run here).
            let second = DPIAnalysisRequest(
                key: key, historyCount: 7, testID: 3, testedLeft: 10, testedRight: 120, diff: false)
            let refused = try await Self.post(port, second.formPairs)
            #expect(DPIAnalysisResponse.errorCode(Array(refused.utf8)) == .invalidParameter)
            #expect(refused.contains("did not run on this server"), "\(refused)")
        }
    }
}
