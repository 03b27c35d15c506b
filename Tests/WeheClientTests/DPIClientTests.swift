import Foundation
import Logging
import Testing
import WeheAnalysis
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheClient

/// The client pieces of the DPI search: probe replays, the search loop with a simulated classifier, the budget, the
/// binary method and the JSON report without a network; the server-driven search's answers to a 503 against a
/// scripted analyzer on loopback.
@Suite struct DPIClientTests {
    /// Two client packets (230 and 40 bytes, each followed by a response) of distinct bytes.
    static func trace() -> ReplayTrace {
        let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 443)
        let first = (0..<230).map { UInt8($0 % 251) }
        let second = (0..<40).map { UInt8(200 - $0) }
        return ReplayTrace(
            packets: [
                ReplayPacket(
                    csPair: pair, payload: first, timestamp: 0, kind: .tcp(responseLength: 751, responseHash: nil)),
                ReplayPacket(
                    csPair: pair, payload: second, timestamp: 0.1, kind: .tcp(responseLength: 182, responseHash: nil)),
            ],
            udpClientPorts: [], tcpCSPairs: [pair.description], name: "Synthetic-01012026")
    }

    /// A classifier that matches when every byte of each keyword region is intact (flipping any breaks it).
    static func classifier(_ keywords: [(DPIPacketID, Range<Int>)]) -> (DPIProbe, [Range<Int>]) -> Bool {
        { probe, mask in
            keywords.contains { packet, keyword in
                packet == probe.packet && ([probe.region] + mask).contains { $0.overlaps(keyword) }
            }
        }
    }

    static func result(_ probe: DPIProbe, mask: [Range<Int>], number: Int, testID: Int, broke: Bool, bytes: Int)
        -> DPIProbeResult
    {
        let thresholds = AppliedThresholds(area: 0.5, ksPValue: 0.01, ks2Ratio: nil, ruleSet: "android")
        let summary = AnalysisSummary(
            areaTest: broke ? 0.8 : 0, ks2RatioTest: 1, originalMeanMbps: 2, controlMeanMbps: broke ? 10 : 2,
            ksStatistic: broke ? 1 : 0.1, ksPValue: broke ? 0.0001 : 0.9,
            verdict: broke ? .differentiation : .noDifferentiation, direction: broke ? .throttled : nil,
            thresholds: thresholds)
        return DPIProbeResult(
            number: number, probe: probe, mask: mask, testID: testID, summary: summary, classificationBroke: broke,
            bytes: bytes, seconds: 1, stoppedEarly: false, samples: ThroughputSeries(mbps: [], times: []))
    }

    /// Runs the loop with the simulated classifier; each probe "transfers" `bytes`.
    static func simulate(
        _ method: DPIMethod, keywords: [(DPIPacketID, Range<Int>)], budget: Int? = nil, bytes: Int = 1_000_000
    ) async throws -> (DPIConclusion, [DPIProbeResult], Int) {
        let map = DPITraceMap(trace: trace())
        var driver: any DPIDriver =
            method == .binary
            ? try BinaryDPIDriver(map: map, configuration: DPISearchConfiguration())
            : try LocalDPIDriver(map: map, configuration: DPISearchConfiguration())
        let matches = classifier(keywords)
        let ignore: @Sendable (DPIEvent) -> Void = { _ in }
        return try await DPIClient.drive(
            &driver, options: DPIOptions(method: method, budgetBytes: budget), perProbeBytes: bytes, onEvent: ignore
        ) { probe, mask, number, testID throws(ReplayClientError) in
            // The probe replay really is built (a region outside the packet would throw here).
            _ = try map.probeReplay(probe, mask: mask)
            return result(probe, mask: mask, number: number, testID: testID, broke: matches(probe, mask), bytes: bytes)
        }
    }

    @Test func packetsAreNumberedPerSideInTraceOrder() {
        let map = DPITraceMap(trace: Self.trace())
        #expect(map.packets.map(\.id.description) == ["C_1", "S_1", "C_2", "S_2"])
        #expect(map.packets.map(\.length) == [230, 751, 40, 182])
    }

    @Test func clientProbeInvertsAllBitsOfExactlyTheRegionOfThatPacket() throws {
        let original = Self.trace()
        let map = DPITraceMap(trace: original)
        let replay = try map.probeReplay(DPIProbe(packet: DPIPacketID(side: .client, number: 2), region: 3..<6))
        #expect(replay.changeSpec == "[-1, null, null]")
        #expect(replay.trace.packets[0].payload == original.packets[0].payload)
        let before = original.packets[1].payload
        let after = replay.trace.packets[1].payload
        #expect(after.count == before.count)
        for index in before.indices {
            #expect(after[index] == ((3..<6).contains(index) ? before[index] ^ 0xFF : before[index]), "byte \(index)")
        }
        // The binary method's mask is inverted too.
        let masked = try map.probeReplay(
            DPIProbe(packet: DPIPacketID(side: .client, number: 1), region: 10..<12), mask: [20..<21])
        #expect(masked.trace.packets[0].payload[20] == original.packets[0].payload[20] ^ 0xFF)
        #expect(masked.trace.packets[0].payload[12] == original.packets[0].payload[12])
        #expect(throws: ReplayClientError.self) {
            try map.probeReplay(DPIProbe(packet: DPIPacketID(side: .client, number: 2), region: 30..<41))
        }
        #expect(throws: ReplayClientError.self) {
            try map.probeReplay(DPIProbe(packet: DPIPacketID(side: .client, number: 3), region: 0..<1))
        }
    }

    @Test func serverProbeSendsTheChangeSpecAndLeavesTheClientBytes() throws {
        let original = Self.trace()
        let replay = try DPITraceMap(trace: original)
            .probeReplay(DPIProbe(packet: DPIPacketID(side: .server, number: 2), region: 40..<52))
        #expect(replay.trace == original)
        #expect(replay.changeSpec == "[2, \"ReplaceI\", [40, 52]]")
        // It is the JSON array [packetNumber, action, spec] the server parses (protocol.md 5.2 #2).
        let parsed = try JSONValue.parse(Array(replay.changeSpec.utf8))
        guard case .array(let items) = parsed, items.count == 3, case .string("ReplaceI") = items[1],
            case .array(let bounds) = items[2], bounds.count == 2
        else {
            Issue.record("not [k, \"ReplaceI\", [L, R]]: \(replay.changeSpec)")
            return
        }
    }

    @Test func localSearchFindsTheKeywordLikeVectorD1() async throws {
        let keyword = (DPIPacketID(side: .client, number: 1), 100..<108)
        let (conclusion, probes, used) = try await Self.simulate(.local, keywords: [keyword])
        guard case .rules(let findings) = conclusion else {
            Issue.record("no rule: \(conclusion)")
            return
        }
        #expect(findings.count == 1)
        #expect(findings.first?.region == 100..<108)
        #expect(findings.first?.content == Array(Self.trace().packets[0].payload[100..<108]))
        #expect(probes.count == 27)  // analysis.md 8.4 D1
        #expect(used == 27_000_000)
        #expect(probes.map(\.testID) == Array(2..<29))
    }

    @Test func budgetStopsBeforeAProbeThatCouldExceedIt() async throws {
        let keyword = (DPIPacketID(side: .client, number: 1), 100..<108)
        let (conclusion, probes, used) = try await Self.simulate(
            .local, keywords: [keyword], budget: 5_500_000, bytes: 1_000_000)
        #expect(conclusion == .budgetExhausted(usedBytes: 5_000_000, budgetBytes: 5_500_000))
        #expect(probes.count == 5)
        #expect(used <= 5_500_000)
    }

    @Test func binarySearchFindsTheKeywordAndBothKeywordsOfAnAndRule() async throws {
        let c1 = DPIPacketID(side: .client, number: 1)
        let (single, singleProbes, _) = try await Self.simulate(.binary, keywords: [(c1, 100..<108)])
        guard case .rules(let findings) = single else {
            Issue.record("no rule: \(single)")
            return
        }
        #expect(findings.map(\.region) == [100..<108])
        #expect(findings.first?.matchingBytes == Array(100..<108))
        let (_, localProbes, _) = try await Self.simulate(.local, keywords: [(c1, 100..<108)])
        // The same halving tree as the breadth-first search on an exact-match classifier.
        #expect(singleProbes.count == localProbes.count)

        let (both, _, _) = try await Self.simulate(.binary, keywords: [(c1, 20..<24), (c1, 200..<206)])
        guard case .rules(let pair) = both else {
            Issue.record("no rule: \(both)")
            return
        }
        #expect(pair.first?.matchingBytes == Array(20..<24) + Array(200..<206))
        #expect(pair.first?.runs == [20..<24, 200..<206])
        #expect(pair.first?.region == 200..<206)
    }

    @Test func binarySearchEndsWithoutARuleWhenNothingMatches() async throws {
        let (conclusion, probes, _) = try await Self.simulate(.binary, keywords: [])
        #expect(conclusion == .noContentRule("no rule found: every packet was probed"))
        #expect(probes.count == 4)  // one whole-packet probe per packet
    }

    @Test func binarySearchAbandonsARegionNeitherOfWhoseHalvesMatters() throws {
        // An "either keyword" classifier: only inverting both breaks it.
        var search = try BinaryDPISearch(packets: [DPIPacket(id: DPIPacketID(side: .client, number: 1), length: 230)])
        while let current = search.current {
            let region = current.probe.region
            let broke = region.contains(50) && region.contains(150)
            try search.record(current.probe, classificationBroke: broke)
        }
        #expect(search.abandonedRegions == 1)
        #expect(search.outcome == .noRuleFound)
        #expect(search.probeCount == 3)
    }

    @Test func jsonReportNamesTheRuleItsBytesAndTheCost() throws {
        let finding = DPIFinding(
            packet: DPIPacketID(side: .client, number: 1), region: 101..<112,
            matchingBytes: Array(47..<56) + Array(101..<112),
            content: Array("pandora.com".utf8))
        let probe = Self.result(
            DPIProbe(packet: DPIPacketID(side: .client, number: 1), region: 10..<368), mask: [], number: 1, testID: 2,
            broke: true, bytes: 1_900_000)
        let search = DPISearchResult(
            test: "pandora", replayName: "Pandora-05132024", userID: "u", historyCount: 7, method: .local,
            earlyStop: false, conclusion: .rules([finding]), probes: [probe], bytes: 1_900_000, durationSeconds: 3.5,
            startedAt: Date(timeIntervalSince1970: 0))
        let root = try JSONValue.parse(Array(DPIReport.json(search).utf8))
        #expect(root["result"] == .string("rule"))
        #expect(root["probeCount"]?.serialized() == "1")
        #expect(root["bytes"]?.serialized() == "1900000")
        guard case .array(let rules)? = root["rules"], let rule = rules.first else {
            Issue.record("no rules array")
            return
        }
        #expect(rule["packet"] == .string("C_1"))
        #expect(rule["left"]?.serialized() == "101")
        #expect(rule["right"]?.serialized() == "112")
        #expect(rule["hex"] == .string("70616e646f72612e636f6d"))
        #expect(rule["text"] == .string("pandora.com"))
        #expect(rule["runs"]?.serialized() == "[[47, 56], [101, 112]]")
        guard case .array(let probes)? = root["probes"], let first = probes.first else {
            Issue.record("no probes array")
            return
        }
        #expect(first["diff"] == .string("T"))
        #expect(first["testID"]?.serialized() == "2")
    }

    @Test func nonPrintableBytesAreShownEscaped() {
        let finding = DPIFinding(
            packet: DPIPacketID(side: .client, number: 1), region: 0..<3, matchingBytes: [0, 1, 2],
            content: [0x16, 0x41, 0x5C])
        #expect(finding.text == "\\x16A\\x5c")
        #expect(finding.hex == "16415c")
    }

    /// The server's search through a scripted analyzer: a DPIanalysis refused with 503 ("not analysed yet …: ask
    /// again", what a busy per-network analysis queue gives before a test's verdict is stored) is asked again with
    /// the polls' pauses, and the probe that follows is taken; one that stays 503 ends after `pollAttempts` asks,
    /// with the server's words and the count. Other refusals are not asked again.
    @Test func serverSearchAsksAgainWhileTheAnalyzerIsUnavailable() async throws {
        let key = DPISearchKey(userID: "u", carrierName: "unknown", replayName: "Synthetic-01012026")
        let reset = ScriptedHTTPServer.Answer(body: DPIResetResponse.body(reset: false))
        let busy = ScriptedHTTPServer.Answer(
            status: 503,
            body: DPIAnalysisResponse.failureBody(
                .unavailable, "the verdict of test u/3 is not analysed yet and cannot be now (queue full): ask again"))
        let probe = ScriptedHTTPServer.Answer(
            body: DPIAnalysisResponse.probe(
                DPIProbeMessage(
                    testPacket: "C_1", testRegionLeft: 0, testRegionRight: 115, packetLength: 230, numTests: 0,
                    testedPackets: 0, bytesUsed: 0)
            ).responseBody())
        let refused = ScriptedHTTPServer.Answer(
            body: DPIAnalysisResponse.failureBody(.invalidParameter, "test u/3 found no differentiation"))
        func driver(_ server: ScriptedHTTPServer, attempts: Int) -> ServerDPIDriver {
            let timing = ReplayClientConfiguration.Timing(
                firstPollDelay: .milliseconds(10), pollAttempts: attempts, maximumPollDelay: .milliseconds(40))
            let analyzer = AnalyzerClient(
                http: HTTPClient(tls: nil, connectTimeout: .seconds(5), requestTimeout: .seconds(5)),
                host: server.host, port: server.port, timing: timing, logger: Logger(label: "test"))
            return ServerDPIDriver(analyzer: analyzer, key: key, historyCount: 3)
        }

        let recovering = try await ScriptedHTTPServer.start(answers: [reset, busy, busy, probe])
        defer { Task { await recovering.stop() } }
        let step = try await driver(recovering, attempts: 12).start(testID: 2)
        guard case .probe(let given, let mask) = step else {
            Issue.record("expected a probe after two 503s, got \(step)")
            return
        }
        #expect(given.packet.description == "C_1" && given.region == 0..<115 && mask.isEmpty)
        let asked = recovering.asked
        #expect(asked.count == 4)
        #expect(asked.first?.contains("DPIreset") == true)
        #expect(asked.dropFirst().allSatisfy { $0.contains("DPIanalysis") } && Set(asked.dropFirst()).count == 1)

        let stuck = try await ScriptedHTTPServer.start(answers: [reset, busy])
        defer { Task { await stuck.stop() } }
        do {
            _ = try await driver(stuck, attempts: 3).start(testID: 2)
            Issue.record("a search the analyzer never serves went on")
        } catch {
            #expect(error.code == .analyzerFailed)
            #expect(error.message.contains("(asked 3 times)") && error.message.contains("not analysed yet"))
        }
        #expect(stuck.asked.count == 1 + 3)

        let refusing = try await ScriptedHTTPServer.start(answers: [reset, refused, probe])
        defer { Task { await refusing.stop() } }
        do {
            _ = try await driver(refusing, attempts: 12).start(testID: 2)
            Issue.record("a refused search went on")
        } catch {
            #expect(error.message.contains("found no differentiation") && !error.message.contains("asked"))
        }
        #expect(refusing.asked.count == 2)
    }

    @Test func historyKeepsTheProbesAndTheSearch() async throws {
        let store = InMemoryResultStore()
        let key = TestKey(userID: "u", historyCount: 7)
        let series = ThroughputSeries(mbps: [2, 2, 2], times: [0.1, 0.2, 0.3])
        try await store.save(
            test: TestRecord(
                key: key, metadata: TestMetadata(replayName: "Synthetic-01012026", startedAt: Date()),
                replays: [
                    ReplayRecord(
                        key: key.replay(0), replayName: "Synthetic-01012026", samples: series, receivedAt: Date()),
                    ReplayRecord(
                        key: key.replay(1), replayName: "Synthetic-01012026", samples: series, receivedAt: Date()),
                ]))
        var configuration = ReplayClientConfiguration(server: "127.0.0.1", userID: "u")
        configuration.store = store
        let client = DPIClient(client: ReplayClient(configuration: configuration), carrierName: "isp")
        let map = DPITraceMap(trace: Self.trace())
        let c1 = DPIPacketID(side: .client, number: 1)
        let probes = [
            Self.result(DPIProbe(packet: c1, region: 10..<230), mask: [], number: 1, testID: 2, broke: true, bytes: 10),
            Self.result(
                DPIProbe(packet: c1, region: 10..<120), mask: [], number: 2, testID: 3, broke: false, bytes: 10),
        ]
        let finding = DPIFinding(
            packet: c1, region: 100..<108, matchingBytes: Array(100..<108),
            content: Array(Self.trace().packets[0].payload[100..<108]))
        let search = DPISearchResult(
            test: "synthetic", replayName: "Synthetic-01012026", userID: "u", historyCount: 7, method: .local,
            earlyStop: false, conclusion: .rules([finding]), probes: probes, bytes: 20, durationSeconds: 1,
            startedAt: Date())
        try await client.store(search, map: map)
        let record = try #require(try await store.test(key))
        #expect(record.replays.map(\.key.testID).sorted() == [0, 1, 2, 3])
        #expect(record.analyses.map(\.comparedTestID).sorted() == [2, 3])
        #expect(record.analyses.last?.summary.note?.contains("search: rule C_1[100,108)") == true)
        let results = try await store.dpiResults(DPIResultQuery(userID: "u"))
        #expect(results.count == 1)
        #expect(results.first?.outcome == "rule")
        #expect(results.first?.id.carrierName == "isp")
        #expect(results.first?.rules.first?.left == 100)
        #expect(results.first?.rules.first?.content == finding.content)
        #expect(results.first?.probes == 2)
        #expect(results.first?.bytesUsed == 20)
    }
}
