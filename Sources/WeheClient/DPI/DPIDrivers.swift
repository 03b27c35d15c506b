import NIOHTTP1
import WeheAnalysis
import WeheWire

/// What a DPI search wants next.
enum DPIStep: Sendable {
    /// Run this probe (with the mask kept inverted).
    case probe(DPIProbe, mask: [Range<Int>])
    /// The search is over.
    case done(DPIConclusion)
}

/// Proposes probes and takes their results: the server (`DPIanalysis`) or a state machine in the client.
protocol DPIDriver: Sendable {
    /// The first probe (or the end, for a trace without a probeable packet).
    mutating func start(testID: Int) async throws(ReplayClientError) -> DPIStep
    /// Reports the result of the probe last proposed and returns what comes next.
    mutating func record(_ result: DPIProbeResult, nextTestID: Int) async throws(ReplayClientError) -> DPIStep
}

extension DPIConclusion {
    /// The conclusion of a client-side search outcome; rule contents come from the trace's client packets.
    init(_ outcome: DPISearchOutcome, map: DPITraceMap) {
        switch outcome {
        case .rules(let rules):
            self = .rules(
                rules.map { rule in
                    DPIFinding(
                        packet: rule.packet, region: rule.region, matchingBytes: rule.matchingBytes,
                        content: map.payload(of: rule.packet).flatMap { try? rule.content(in: $0) })
                })
        case .noDPIInFirstPackets(let packets): self = .noContentRule("NO DPI for first \(packets) pacs")
        case .noRuleFound: self = .noContentRule("no rule found: every packet was probed")
        case .probeLimitReached(let probes): self = .probeLimit(probes)
        }
    }
}

/// The breadth-first search of analysis.md 5.3 (`DPISearch`) run by the client.
struct LocalDPIDriver: DPIDriver {
    var search: DPISearch
    let map: DPITraceMap

    init(map: DPITraceMap, configuration: DPISearchConfiguration) throws(ReplayClientError) {
        do {
            search = try DPISearch(packets: map.packets, configuration: configuration)
        } catch {
            throw ReplayClientError(.invalidInput, "DPI search: \(error.message)")
        }
        self.map = map
    }

    func start(testID: Int) async throws(ReplayClientError) -> DPIStep { step() }

    mutating func record(_ result: DPIProbeResult, nextTestID: Int) async throws(ReplayClientError) -> DPIStep {
        do {
            try search.record(result.probe, classificationBroke: result.classificationBroke)
        } catch {
            throw ReplayClientError(.invalidInput, "DPI search: \(error.message)")
        }
        return step()
    }

    private func step() -> DPIStep {
        if let probe = search.currentProbe { return .probe(probe, mask: []) }
        return .done(DPIConclusion(search.outcome ?? .noRuleFound, map: map))
    }
}

/// The binary search of analysis.md 5.5 (`BinaryDPISearch`) run by the client.
struct BinaryDPIDriver: DPIDriver {
    var search: BinaryDPISearch
    let map: DPITraceMap

    init(map: DPITraceMap, configuration: DPISearchConfiguration) throws(ReplayClientError) {
        do {
            search = try BinaryDPISearch(packets: map.packets, configuration: configuration)
        } catch {
            throw ReplayClientError(.invalidInput, "DPI search: \(error.message)")
        }
        self.map = map
    }

    func start(testID: Int) async throws(ReplayClientError) -> DPIStep { step() }

    mutating func record(_ result: DPIProbeResult, nextTestID: Int) async throws(ReplayClientError) -> DPIStep {
        do {
            try search.record(result.probe, classificationBroke: result.classificationBroke)
        } catch {
            throw ReplayClientError(.invalidInput, "DPI search: \(error.message)")
        }
        return step()
    }

    private func step() -> DPIStep {
        if let current = search.current { return .probe(current.probe, mask: current.mask) }
        return .done(DPIConclusion(search.outcome ?? .noRuleFound, map: map))
    }
}

/// The server's search (analysis.md 5.2): `DPIanalysis` with -1/-1 for the first probe, then one report per probe.
struct ServerDPIDriver: DPIDriver {
    let analyzer: AnalyzerClient
    let key: DPISearchKey
    let historyCount: Int

    /// Drops any search the server still holds for this user, replay and provider (one stopped by a budget or an
    /// interruption, compared with an earlier test's original), then asks for the first probe of a new one.
    func start(testID: Int) async throws(ReplayClientError) -> DPIStep {
        let path = "/Results?" + FormParameters.encode(key.formPairs(command: DPIMessages.resetCommand))
        let reset = try await analyzer.getAskingAgainWhileUnavailable(path, what: "the analyzer (DPIreset)").response
        if case .bool(false)? = (try? JSONValue.parse(reset.body))?["success"] {
            throw ReplayClientError(
                .analyzerFailed,
                "the analyzer refused DPIreset: \(String(decoding: reset.body.prefix(200), as: UTF8.self))")
        }
        return try await ask(DPIAnalysisRequest.currentProbe(key: key, historyCount: historyCount, testID: testID))
    }

    func record(_ result: DPIProbeResult, nextTestID: Int) async throws(ReplayClientError) -> DPIStep {
        try await ask(
            DPIAnalysisRequest(
                key: key, historyCount: historyCount, testID: result.testID,
                testedLeft: result.probe.region.lowerBound, testedRight: result.probe.region.upperBound,
                diff: result.classificationBroke, testedPacket: result.probe.packet.description,
                probeBytes: result.bytes))
    }

    private func ask(_ request: DPIAnalysisRequest) async throws(ReplayClientError) -> DPIStep {
        let path = "/Results?" + FormParameters.encode(request.formPairs)
        // A 503 changed nothing on the server (its store, or the analysis of the test's verdict a search needs first,
        // could not be reached now), so the same request can go again.
        let (response, asked) = try await analyzer.getAskingAgainWhileUnavailable(
            path, what: "the analyzer (DPIanalysis)")
        let parsed: Result<DPIAnalysisResponse, AnalyzerFailure>
        do {
            parsed = try DPIAnalysisResponse.parse(response.body)
        } catch {
            throw ReplayClientError(
                .analyzerFailed,
                "the analyzer's DPIanalysis answer is unreadable (HTTP \(response.status)): \(error.message)")
        }
        switch parsed {
        case .failure(let failure):
            let times = asked > 1 ? " (asked \(asked) times)" : ""
            throw ReplayClientError(.analyzerFailed, "the analyzer refused the DPI search\(times): \(failure.message)")
        case .success(.probe(let message)):
            let packet: DPIPacketID
            do {
                packet = try DPIPacketID(parsing: message.testPacket)
            } catch {
                throw ReplayClientError(.analyzerFailed, "the analyzer proposed a probe of \(message.testPacket)")
            }
            return .probe(
                DPIProbe(packet: packet, region: message.testRegionLeft..<message.testRegionRight), mask: [])
        case .success(.rules(let found)):
            var findings: [DPIFinding] = []
            for rule in found.rules {
                guard let packet = try? DPIPacketID(parsing: rule.packet) else { continue }
                findings.append(
                    DPIFinding(
                        packet: packet, region: rule.left..<rule.right,
                        matchingBytes: rule.matchingBytes.isEmpty ? Array(rule.left..<rule.right) : rule.matchingBytes,
                        content: rule.bytes))
            }
            return .done(.rules(findings))
        case .success(.noRule(let none)):
            if none.reason == .probeLimitReached { return .done(.probeLimit(none.numTests)) }
            return .done(.noContentRule(none.message))
        }
    }
}
