import Foundation
import WeheAnalysis
import WeheCore
import WeheStore
import WeheWire

extension LoadedReplay {
    /// One payload packet of the replay for the DPI search.
    struct DPITracePacket: Sendable {
        var packet: DPIPacket
        var payload: [UInt8]
    }

    /// The packets the DPI search probes (analysis.md 5.3): every packet with a non-empty payload, client packets
    /// numbered `C_1, C_2, …` and server packets `S_1, S_2, …` per side (the server numbering is the change spec's,
    /// `serverPacketContents`), merged in trace order (by trace time; a client packet comes before the response it
    /// triggers at the same time).
    var dpiPackets: [DPITracePacket] {
        var entries: [(time: Double, rank: Int, order: Int, packet: DPITracePacket)] = []
        var clientNumber = 0
        for (index, packet) in client.packets.enumerated() where !packet.payload.isEmpty {
            clientNumber += 1
            let id = DPIPacketID(side: .client, number: clientNumber)
            entries.append(
                (
                    packet.timestamp, 0, index,
                    DPITracePacket(packet: DPIPacket(id: id, length: packet.payload.count), payload: packet.payload)
                ))
        }
        for (index, content) in serverPacketContents.enumerated() {
            let id = DPIPacketID(side: .server, number: index + 1)
            entries.append(
                (
                    content.time, 1, index,
                    DPITracePacket(packet: DPIPacket(id: id, length: content.payload.count), payload: content.payload)
                ))
        }
        entries.sort { ($0.time, $0.rank, $0.order) < ($1.time, $1.rank, $1.order) }
        return entries.map(\.packet)
    }

    /// Bytes one full replay of this trace moves: every client payload plus every server payload.
    var dpiTraceBytes: Int {
        client.packets.reduce(0) { $0 + $1.payload.count } + serverPacketLengths.reduce(0, +)
    }
}

/// Serialises requests for one search inside this process, so two concurrent reports cannot both advance it.
actor DPISearchLocks {
    static let shared = DPISearchLocks()
    private var busy: Set<DPISearchID> = []
    private var waiters: [DPISearchID: [CheckedContinuation<Void, Never>]] = [:]

    func acquire(_ id: DPISearchID) async {
        if busy.insert(id).inserted { return }
        await withCheckedContinuation { waiters[id, default: []].append($0) }
    }

    func release(_ id: DPISearchID) {
        if var queue = waiters[id], !queue.isEmpty {
            let next = queue.removeFirst()
            waiters[id] = queue.isEmpty ? nil : queue
            next.resume()
        } else {
            busy.remove(id)
        }
    }
}

/// The analyzer's `DPIanalysis`, `DPIrule` and `DPIreset` (analysis.md 5.2-5.4, wire format in
/// `WeheWire.DPIMessages`), with the search state kept in the result store per user, provider and replay.
///
/// Reference defects fixed (analysis.md 5.4): the rule is the full longest run (1), midpoints are integers (2), and
/// running past the last packet ends the search with "no rule" (`packetsExhausted`) instead of an index error (3).
/// A report must name the probe last handed out (its region, and its packet when `testPacket` is sent); anything
/// else is refused with a `dpiError` code and changes nothing. A finished search is moved to the results (what
/// `DPIrule` answers and the dashboards list); the next `DPIanalysis` with -1/-1 starts a new search.
///
/// A search is tied to a stored test (analysis.md 5.2: it follows a test that found differentiation): every
/// `DPIanalysis` names a test of that user (`historyCount`) whose original and control replays ran here, on the
/// searched replay, and whose analysis found differentiation; every report names a probe replay (`testID`) stored
/// here. Requests are limited per client network and per user (`DPIRequestLimits`), and a reported `probeBytes` is
/// clamped to one full replay of the trace.
struct DPIService: Sendable {
    let store: any ResultStore
    let catalogue: ReplayCatalogue
    let now: @Sendable () -> Date
    /// The per-test analysis (the verdict of the test a search follows).
    let analyzer: AnalysisRunner
    let limits: DPIRequestLimits

    struct Reply: Error, Sendable, Equatable {
        var status: Int
        var body: String
    }

    private static func refuse(_ code: DPIErrorCode, _ message: String, status: Int = 200) -> Reply {
        Reply(status: status, body: DPIAnalysisResponse.failureBody(code, message))
    }

    private func unavailable(_ error: any Error) -> Reply {
        Self.refuse(.unavailable, "the DPI search state could not be read or written: \(error)", status: 503)
    }

    /// Checks the key fields and returns the store's identifier, or a refusal.
    private static func searchID(_ key: DPISearchKey) -> Result<DPISearchID, Reply> {
        guard IDDeclaration.isValidUserID(key.userID) else {
            return .failure(refuse(.invalidParameter, "userID is not a valid user id"))
        }
        guard key.carrierName.utf8.count <= 200, key.replayName.utf8.count <= 200 else {
            return .failure(refuse(.invalidParameter, "carrierName and replayName must be at most 200 bytes"))
        }
        return .success(DPISearchID(userID: key.userID, carrierName: key.carrierName, replayName: key.replayName))
    }

    /// Answers one of the three DPI commands from `clientAddress`, within the network's request allowance.
    func answer(_ command: String, _ parameters: [String: String], clientAddress: String) async -> Reply {
        if let refusal = limits.admit(clientAddress: clientAddress) { return Self.tooMany(refusal) }
        switch command {
        case DPIMessages.ruleCommand: return await rule(parameters)
        case DPIMessages.resetCommand: return await reset(parameters)
        default: return await analysis(parameters)
        }
    }

    private static func tooMany(_ reason: String) -> Reply {
        refuse(.unavailable, reason, status: 429)
    }

    /// Refuses a request that is not tied to a stored test of its user with differentiation, or a report whose probe
    /// replay did not reach the store; `nil` when it is tied.
    private func untied(_ request: DPIAnalysisRequest) async -> Reply? {
        let key = TestKey(userID: request.key.userID, historyCount: request.historyCount)
        let test: TestRecord?
        do {
            test = try await store.test(key)
        } catch {
            return unavailable(error)
        }
        guard let test, test.replay(0) != nil, test.replay(1) != nil else {
            return Self.refuse(
                .invalidParameter,
                "no test \(key) with its original and control replays (testID 0 and 1) ran on this server: a DPI"
                    + " search follows a test that found differentiation here")
        }
        guard test.metadata.replayName == request.key.replayName else {
            return Self.refuse(
                .invalidParameter,
                "test \(key) replayed \(test.metadata.replayName.prefix(80)), not \(request.key.replayName.prefix(80))")
        }
        let verdict: Verdict?
        do {
            verdict = try await analyzer.result(for: key, comparedTestID: 1)?.1.summary.verdict
        } catch let refusal as AnalysisScheduler.Refusal {
            return Self.refuse(
                .unavailable,
                "the verdict of test \(key) is not analysed yet and cannot be now (\(refusal)): ask again",
                status: 503)
        } catch {
            return unavailable(error)
        }
        guard verdict == .differentiation else {
            return Self.refuse(
                .invalidParameter,
                "test \(key) found no differentiation (\(verdict?.rawValue ?? "no analysis")): there is no"
                    + " classification to search for")
        }
        if !request.asksForCurrentProbe, test.replay(request.testID) == nil {
            return Self.refuse(
                .invalidParameter,
                "the probe replay (testID \(request.testID) of test \(key)) did not run on this server: report a"
                    + " probe after its replay")
        }
        return nil
    }

    // MARK: DPIanalysis

    func analysis(_ parameters: [String: String]) async -> Reply {
        let request: DPIAnalysisRequest
        do {
            request = try DPIAnalysisRequest(form: parameters)
        } catch {
            return Self.refuse(.invalidParameter, error.message)
        }
        let id: DPISearchID
        switch Self.searchID(request.key) {
        case .success(let value): id = value
        case .failure(let reply): return reply
        }
        guard let replay = catalogue.replay(named: request.key.replayName) else {
            return Self.refuse(.unknownReplay, "this server has no replay named '\(request.key.replayName.prefix(80))'")
        }
        let packets = replay.dpiPackets
        guard !packets.isEmpty else {
            return Self.refuse(.unknownReplay, "replay \(replay.name) has no packet with a payload to search")
        }
        if !request.asksForCurrentProbe, request.testID < 2 {
            return Self.refuse(
                .invalidParameter,
                "testID \(request.testID) is one of the test's own replays (0 original, 1 control): probes use 2, 3, …")
        }
        if let refusal = limits.admit(userID: id.userID) { return Self.tooMany(refusal) }
        if let refusal = await untied(request) { return refusal }
        await DPISearchLocks.shared.acquire(id)
        let reply = await locked(request, id: id, replay: replay, packets: packets)
        await DPISearchLocks.shared.release(id)
        return reply
    }

    private func locked(
        _ request: DPIAnalysisRequest, id: DPISearchID, replay: LoadedReplay, packets: [LoadedReplay.DPITracePacket]
    ) async -> Reply {
        let existing: DPISearchRecord?
        do {
            existing = try await store.dpiSearch(id)
        } catch {
            return unavailable(error)
        }
        var record: DPISearchRecord
        var search: DPISearch
        if let existing {
            guard let decoded = try? JSONDecoder().decode(DPISearch.self, from: Data(existing.state.utf8)) else {
                return Self.refuse(.unavailable, "the stored state of search \(id) is unreadable; send DPIreset")
            }
            guard decoded.packets == packets.map(\.packet) else {
                return Self.refuse(
                    .unavailable, "replay \(replay.name) changed since search \(id) started; send DPIreset to restart")
            }
            record = existing
            search = decoded
        } else {
            guard request.asksForCurrentProbe else {
                return Self.refuse(
                    .noProbeOutstanding,
                    "no DPI search is running for \(id): ask for the first probe with testedLeft=testedRight=-1"
                        + " (a finished search's outcome is in DPIrule)")
            }
            do {
                search = try DPISearch(packets: packets.map(\.packet))
            } catch {
                return Self.refuse(.unknownReplay, "replay \(replay.name) cannot be searched: \(error.message)")
            }
            let start = now()
            record = DPISearchRecord(
                id: id, historyCount: request.historyCount, startedAt: start, updatedAt: start, probes: 0, bytesUsed: 0,
                state: "")
        }
        if !request.asksForCurrentProbe {
            guard let probe = search.currentProbe else {
                return Self.refuse(.noProbeOutstanding, "search \(id) has no probe outstanding")
            }
            guard request.testedLeft == probe.region.lowerBound, request.testedRight == probe.region.upperBound,
                request.testedPacket.map({ $0 == probe.packet.description }) ?? true
            else {
                let reported = "\(request.testedPacket ?? "?")[\(request.testedLeft),\(request.testedRight))"
                return Self.refuse(.regionMismatch, "reported \(reported) but the probe handed out is \(probe)")
            }
            do {
                try search.record(probe, classificationBroke: request.diff)
            } catch {
                return Self.refuse(.regionMismatch, error.message)
            }
            record.probes = search.probeCount
            record.bytesUsed += await probeBytes(request, replay: replay)
            record.updatedAt = now()
        }
        if let outcome = search.outcome {
            let (response, result) = finished(outcome, search: search, record: record, packets: packets)
            do {
                try await store.finish(dpiSearch: result)
            } catch {
                return unavailable(error)
            }
            return Reply(status: 200, body: response.responseBody())
        }
        guard let probe = search.currentProbe else {
            return Self.refuse(.unavailable, "search \(id) is in no state")
        }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            record.state = String(decoding: try encoder.encode(search), as: UTF8.self)
            try await store.save(dpiSearch: record)
        } catch {
            return unavailable(error)
        }
        let length = packets.first { $0.packet.id == probe.packet }?.packet.length ?? probe.region.upperBound
        return Reply(
            status: 200,
            body: DPIAnalysisResponse.probe(
                DPIProbeMessage(
                    testPacket: probe.packet.description, testRegionLeft: probe.region.lowerBound,
                    testRegionRight: probe.region.upperBound, packetLength: length, numTests: search.probeCount,
                    testedPackets: search.testedPacketCount, bytesUsed: record.bytesUsed)
            ).responseBody())
    }

    /// What a reported probe cost: the client's `probeBytes`, at most one full replay of the trace (what one probe
    /// can move), else one full replay when the store has the probe's replay (its samples were uploaded, so it ran),
    /// else 0.
    private func probeBytes(_ request: DPIAnalysisRequest, replay: LoadedReplay) async -> Int {
        if let reported = request.probeBytes { return min(max(0, reported), replay.dpiTraceBytes) }
        let key = TestKey(userID: request.key.userID, historyCount: request.historyCount)
        guard let test = try? await store.test(key), test.replay(request.testID) != nil else { return 0 }
        return replay.dpiTraceBytes
    }

    private func finished(
        _ outcome: DPISearchOutcome, search: DPISearch, record: DPISearchRecord,
        packets: [LoadedReplay.DPITracePacket]
    ) -> (DPIAnalysisResponse, DPIResultRecord) {
        var result = DPIResultRecord(
            id: record.id, historyCount: record.historyCount, startedAt: record.startedAt, finishedAt: now(),
            probes: search.probeCount, bytesUsed: record.bytesUsed, outcome: "", message: "", rules: [])
        switch outcome {
        case .rules(let rules):
            result.outcome = "rule"
            result.rules = rules.map { rule in
                let payload = packets.first { $0.packet.id == rule.packet }?.payload ?? []
                let content = (try? rule.content(in: payload)) ?? []
                return DPIFoundRule(
                    packet: rule.packet.description, left: rule.region.lowerBound, right: rule.region.upperBound,
                    content: content, matchingBytes: rule.matchingBytes, packetPayload: payload)
            }
            result.message = "rule: " + outcome.description
        case .noDPIInFirstPackets:
            result.outcome = DPINoRuleReason.noDPIInFirstPackets.rawValue
            result.message = outcome.description
        case .probeLimitReached:
            result.outcome = DPINoRuleReason.probeLimitReached.rawValue
            result.message = outcome.description
        case .noRuleFound:
            if search.probeCount == 0 {
                result.outcome = DPINoRuleReason.noProbeablePacket.rawValue
                result.message = "no content rule: no packet is longer than the 10 bytes the search never changes"
            } else {
                result.outcome = DPINoRuleReason.packetsExhausted.rawValue
                result.message = "no content rule: all \(packets.count) packets probed without a matching byte"
            }
        }
        return (Self.response(result), result)
    }

    /// The wire answer for a finished search.
    static func response(_ result: DPIResultRecord) -> DPIAnalysisResponse {
        if result.foundRule {
            return .rules(
                DPIRulesMessage(
                    rules: result.rules.map {
                        DPIRuleMessage(
                            packet: $0.packet, left: $0.left, right: $0.right, hex: HexCodec.encode($0.content),
                            matchingBytes: $0.matchingBytes)
                    }, numTests: result.probes, bytesUsed: result.bytesUsed))
        }
        return .noRule(
            DPINoRuleMessage(
                reason: DPINoRuleReason(rawValue: result.outcome) ?? .packetsExhausted, message: result.message,
                numTests: result.probes, bytesUsed: result.bytesUsed))
    }

    // MARK: DPIrule, DPIreset

    private static func key(_ parameters: [String: String]) -> Result<DPISearchID, Reply> {
        let key: DPISearchKey
        do {
            key = try DPISearchKey(form: parameters)
        } catch {
            return .failure(refuse(.invalidParameter, error.message))
        }
        return searchID(key)
    }

    func rule(_ parameters: [String: String]) async -> Reply {
        let id: DPISearchID
        switch Self.key(parameters) {
        case .success(let value): id = value
        case .failure(let reply): return reply
        }
        let results: [DPIResultRecord]
        do {
            results = try await store.dpiResults(
                DPIResultQuery(userID: id.userID, carrierName: id.carrierName, replayName: id.replayName, limit: 1))
        } catch {
            return unavailable(error)
        }
        guard let latest = results.first else {
            return Reply(status: 200, body: AnalyzerFailure(message: "No result found").body)
        }
        return Reply(
            status: 200,
            body: Self.response(latest).responseBody(timestamp: AnalyzerAPI.dateText(latest.finishedAt)))
    }

    func reset(_ parameters: [String: String]) async -> Reply {
        let id: DPISearchID
        switch Self.key(parameters) {
        case .success(let value): id = value
        case .failure(let reply): return reply
        }
        await DPISearchLocks.shared.acquire(id)
        let deleted: Result<Bool, WeheStoreError>
        do {
            deleted = .success(try await store.deleteDPISearch(id))
        } catch {
            deleted = .failure(error)
        }
        await DPISearchLocks.shared.release(id)
        switch deleted {
        case .success(let reset): return Reply(status: 200, body: DPIResetResponse.body(reset: reset))
        case .failure(let error): return unavailable(error)
        }
    }
}

extension AnalyzerAPI.Answer {
    init(_ reply: DPIService.Reply) {
        self.init(status: reply.status, body: reply.body)
    }
}
