import Foundation
import Logging
import WeheAnalysis
import WeheCore
import WeheStore
import WeheWire

/// The analyzer's `/Results` commands (protocol.md 9 and 12), independent of HTTP: parameters in, status and JSON
/// body out. Every answer is a JSON object with a boolean `success`; failures carry `error` (or the reference's
/// `missing` / `value error` keys for absent or malformed parameters).
struct AnalyzerAPI: Sendable {
    let context: ServerContext

    /// An answer: HTTP status and JSON text.
    struct Answer: Sendable, Equatable {
        var status: Int
        var body: String
    }

    /// Who is asking, as far as the fleet is concerned.
    enum Caller: Sendable, Equatable {
        /// Another server of our fleet (its request carried a valid fleet signature).
        case fleetMember
        /// Anyone else; the reason says why the request is not a fleet member's.
        case anonymous(reason: String)
    }

    private var store: any ResultStore { context.configuration.store }

    private var dpi: DPIService {
        DPIService(
            store: store, catalogue: context.catalogue, now: context.configuration.now, analyzer: context.analysis,
            limits: context.dpiLimits)
    }

    /// Answers one request from `clientAddress` (the socket peer).
    func answer(
        parameters: [String: String],
        clientAddress: String,
        caller: Caller = .anonymous(reason: "no fleet credentials")
    ) async -> Answer {
        guard let command = parameters["command"] else { return failure("command not provided") }
        do {
            switch command {
            case "analyze": return try await analyze(parameters)
            case "singleResult": return try await singleResult(parameters)
            case "defaultSetting":
                return Answer(
                    status: 200,
                    body: #"{"success": true, "areaThreshold": "0.5", "ks2Threshold": "0.01", "ks2Ratio": "0.95"}"#)
            case "getServers": return getServers(parameters, clientAddress: clientAddress)
            case "localize": return try await localize(parameters, clientAddress: clientAddress)
            case "localizeResult": return try await localizeResult(parameters)
            case "getMeasurements": return try await measurements(parameters, caller: caller)
            case DatagramReceipt.command: return try await udpLoss(parameters, clientAddress: clientAddress)
            case DPIMessages.analysisCommand, DPIMessages.ruleCommand, DPIMessages.resetCommand:
                return Answer(await dpi.answer(command, parameters, clientAddress: clientAddress))
            default: return failure("unknown command")
            }
        } catch let error as ParameterError {
            return error.answer
        } catch {
            context.logger.error(
                "analyzer request failed", metadata: ["wehe.command": "\(command)", "wehe.error": "\(error)"])
            return Answer(status: 500, body: Self.object([("success", .bool(false)), ("error", .string("\(error)"))]))
        }
    }

    // MARK: commands

    private func analyze(_ parameters: [String: String]) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        guard testID >= 1 else { return failure("testID must be at least 1 (the replay compared with testID 0)") }
        let key = TestKey(userID: userID, historyCount: historyCount)
        guard let record = try await store.test(key) else {
            return failure("No test found for userID \(userID) and historyCount \(historyCount)")
        }
        guard record.replay(0) != nil, record.replay(testID) != nil else {
            return failure("Test \(key) lacks the samples of testID 0 or \(testID)")
        }
        // Started here, computed on the analysis threads; the answer waits a little, the result goes to singleResult.
        if let (_, analysis) = try await context.analysis.result(
            for: key, comparedTestID: testID, waitingAtMost: Self.analysisWait)
        {
            context.metrics.verdict(analysis.summary.verdict.rawValue)
        }
        return Answer(status: 200, body: #"{"success": true}"#)
    }

    /// How long `analyze` and `singleResult` wait for an analysis being computed before answering without it.
    static let analysisWait: Duration = .seconds(5)

    private func singleResult(_ parameters: [String: String]) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        let key = TestKey(userID: userID, historyCount: historyCount)
        // An analysis not done within `analysisWait` (queued behind others, or refused for now) answers "No result
        // found": the clients ask again.
        guard testID >= 1,
            let (record, analysis) = try await context.analysis.result(
                for: key, comparedTestID: testID, waitingAtMost: Self.analysisWait)
        else {
            return notFound
        }
        let summary = analysis.summary
        var result = SingleResult(
            replayName: record.replay(testID)?.replayName ?? record.metadata.replayName,
            date: Self.dateText(record.metadata.startedAt),
            userID: userID,
            extraString: record.metadata.extraString ?? "extraString",
            historyCount: historyCount,
            testID: testID,
            areaTest: summary.areaTest,
            ks2RatioTest: summary.ks2RatioTest,
            originalMeanMbps: summary.originalMeanMbps,
            controlMeanMbps: summary.controlMeanMbps,
            ksStatistic: summary.ksStatistic,
            ksPValue: summary.ksPValue,
            asNumber: record.metadata.asNumber.flatMap { UInt32(exactly: $0) },
            asName: record.metadata.asName
        )
        if let reason = summary.insufficientDataReason {
            Self.markInsufficient(&result, reason: reason)
        }
        return Answer(status: 200, body: result.responseBody)
    }

    /// The answer for a test whose samples cannot support a verdict (too few measurements). The published clients
    /// decide from `area_test` and `ks2pVal` alone, and with the true numbers of an empty pair (area 0, p 1) they
    /// would show "no differentiation". So the answer carries `area_test` ±1 (the sign of the true area; +1 when it
    /// is 0) and `ks2pVal` 1: under both published rules (Android/cmdline and iOS) |area| reaches every area
    /// threshold and p never passes the KS criterion, which is their "inconclusive, try again" (and their
    /// confirmation run). The reason travels in our extension key `insufficient_data`; the means are the true ones;
    /// the store keeps the true statistics.
    static func markInsufficient(_ result: inout SingleResult, reason: String) {
        result.areaTest = result.areaTest < 0 ? -1 : 1
        result.ksPValue = 1
        result.insufficientData = reason
    }

    /// The pairs for the asking client: by its `clientIP` parameter when that is an address (the published handler
    /// reads it), else by the request's source address; longest matching prefix first, then the default pairs.
    /// Site pairs (`server-site-pairs`, for clients of the M-Lab fleet) and address pairs (`server-ip-pairs`) are
    /// matched separately, each list in the published format `[first, second, networks]`.
    private func getServers(_ parameters: [String: String], clientAddress: String) -> Answer {
        let claimed = parameters["clientIP"].map { $0.trimmingCharacters(in: .whitespaces) }
        let client = claimed.flatMap { AddressText.isIPAddress($0) ? $0 : nil } ?? clientAddress
        func listed(_ configured: [LocalizationPair]) -> [JSONValue] {
            LocalizationPair.matching(configured, clientAddress: client).map { pair in
                JSONValue.array([.string(pair.first), .string(pair.second), .string(pair.label)])
            }
        }
        let sites = listed(context.configuration.localizationSitePairs)
        let addresses = listed(context.configuration.localizationServerPairs)
        guard !sites.isEmpty || !addresses.isEmpty else { return failure("No Y-topology found.") }
        return Answer(
            status: 200,
            body: Self.object([
                ("success", .bool(true)),
                ("response", .object([("server-site-pairs", .array(sites)), ("server-ip-pairs", .array(addresses))])),
            ])
        )
    }

    /// The client's report of the datagrams of a UDP replay that arrived (`DatagramReceipt`): with the server's log
    /// of what it sent, the replay's loss timeline, stored as the `TCP_INFO` timelines of TCP replays are.
    private func udpLoss(_ parameters: [String: String], clientAddress: String) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        guard let text = parameters["received"] else { throw ParameterError.missing("received") }
        guard let received = DatagramReceipt.decode(text) else {
            throw ParameterError.value(
                "received must be 8 hex digits per datagram, at most \(DatagramReceipt.maximumDatagrams) datagrams")
        }
        let key = ReplayKey(userID: userID, historyCount: historyCount, testID: testID)
        let record: ReplayLossRecord
        do throws(UDPSendLogs.Refusal) {
            record = try context.udpSendLogs.report(
                key, received: received, from: AddressText.normalized(clientAddress),
                recordedAt: context.configuration.now())
        } catch {
            return failure(error.message)
        }
        try await store.save(loss: record)
        context.udpSendLogs.forget(key)
        let lost = record.samples.reduce(0) { $0 + ($1.bytesLost > 0 ? 1 : 0) }
        return Answer(
            status: 200,
            body: Self.object([
                ("success", .bool(true)),
                ("datagrams", .number(Double(record.samples.count), text: "\(record.samples.count)")),
                ("lost", .number(Double(lost), text: "\(lost)")),
            ]))
    }

    private func localize(_ parameters: [String: String], clientAddress: String) async throws -> Answer {
        // Each request may make this server ask two others and store a row: a few per address, network, user and
        // minute (LocalizeAdmission).
        func tooMany(_ reason: String) -> Answer {
            Answer(status: 429, body: Self.object([("success", .bool(false)), ("error", .string(reason))]))
        }
        if let refusal = context.localizeAdmission.admit(clientAddress: clientAddress) { return tooMany(refusal) }
        let userID = try Self.userID(parameters)
        if let refusal = context.localizeAdmission.admit(userID: userID) { return tooMany(refusal) }
        let first = try Self.jsonObject(parameters, "server1Info")
        let second = try Self.jsonObject(parameters, "server2Info")
        let single = try Self.jsonObject(parameters, "singleServerInfo")
        guard let h1 = first["historyCount"].flatMap(Self.intValue),
            let h2 = second["historyCount"].flatMap(Self.intValue)
        else {
            throw ParameterError.value("server1Info and server2Info need an integer historyCount")
        }
        let singleCount = single["singleReplay_historyCount"].flatMap(Self.intValue)
        let replayName = first["replayName"].flatMap(Self.stringValue) ?? ""
        let servers = [
            first["server"].flatMap(Self.stringValue) ?? "", second["server"].flatMap(Self.stringValue) ?? "",
        ]
        // One of the two simultaneous replays ran here: otherwise the request is not this server's to answer, and
        // nothing is stored for it (an unauthenticated caller cannot fill the store with made-up runs).
        var ranHere = false
        for historyCount in [h1, h2] {
            let key = ReplayKey(userID: userID, historyCount: historyCount, testID: 0)
            let hasSamples = try await store.test(key.test)?.replay(0) != nil
            let hasLoss = try await store.loss(key) != nil
            if hasSamples || hasLoss {
                ranHere = true
                break
            }
        }
        guard ranHere else {
            return failure("neither replay of this localization (historyCount \(h1) or \(h2)) ran on this server")
        }
        var notes: [String] = []
        let peers = context.peerMeasurements
        let fleetPeers = context.fleetPeers
        /// Whether `server` may be asked: only configured pair and fleet servers ever get a signed request.
        func askable(_ server: String) -> Bool {
            guard fleetPeers.contains(FleetAuthenticator.hostName(server)) else {
                notes.append("\(server.prefix(64)) not asked: not a configured localization pair or fleet server")
                return false
            }
            return true
        }

        // Throughput samples of the original replays: the simultaneous pair and the earlier single-server test.
        // Pieces not stored here come from the server that ran them (its analyzer's getMeasurements).
        func samples(_ historyCount: Int?, on server: String?) async throws -> [Double]? {
            guard let historyCount else { return nil }
            if let local = try await store.test(TestKey(userID: userID, historyCount: historyCount))?.replay(0) {
                return local.samples.mbps
            }
            guard let server, !server.isEmpty else {
                notes.append("no throughput samples of historyCount \(historyCount) here and no server named to ask")
                return nil
            }
            guard askable(server) else { return nil }
            switch await peers.clientThroughput(host: server, userID: userID, historyCount: historyCount) {
            case .success(let samples): return samples
            case .failure(let error):
                notes.append(error.message)
                return nil
            }
        }
        let simultaneousFirst = try await samples(h1, on: servers[0])
        let simultaneousSecond = try await samples(h2, on: servers[1])
        let singleSamples = try await samples(
            singleCount, on: single["singleReplay_server"].flatMap(Self.stringValue))

        // Loss timelines of the two simultaneous originals: ours from the store, the other from its server. Each is
        // timed from its own replay's start, so the servers' wall clocks never enter the alignment.
        func lossRecord(_ historyCount: Int, on server: String) async throws -> ReplayLossRecord? {
            if let local = try await store.loss(ReplayKey(userID: userID, historyCount: historyCount, testID: 0)) {
                return local
            }
            guard !server.isEmpty else {
                notes.append("no loss timeline of historyCount \(historyCount) here and no server named to ask")
                return nil
            }
            guard askable(server) else { return nil }
            switch await peers.loss(host: server, userID: userID, historyCount: historyCount) {
            case .success(let record): return record
            case .failure(let error):
                notes.append(error.message)
                return nil
            }
        }
        var lossInput: (first: LossBranch, second: LossBranch)?
        if context.catalogue.replay(named: replayName)?.transport == .udp {
            // Measured on the kernel Y testbed: two UDP replays send on the same recorded schedule with no congestion
            // control, so one throttler on each branch drops them at the same moments, just as a shared one would
            // (4 of 4 runs said "access network" with the throttlers off the shared segment). The loss timelines stay
            // stored and served (getMeasurements); the throughput test alone decides.
            notes.append(
                "loss-correlation test skipped: UDP replay (the two replays' losses follow their common schedule "
                    + "wherever the throttlers are)")
        } else if let firstLoss = try await lossRecord(h1, on: servers[0]),
            let secondLoss = try await lossRecord(h2, on: servers[1])
        {
            do {
                if let a = try LossMeasurements.branch(firstLoss), let b = try LossMeasurements.branch(secondLoss) {
                    lossInput = (a, b)
                } else {
                    notes.append("loss-correlation test skipped: no RTT was measured on one of the replays")
                }
            } catch {
                notes.append("loss-correlation test skipped: \(error.message)")
            }
        }

        let analyzer = try LocalizationAnalyzer()
        var input = LocalizationAnalyzer.Input(single: singleSamples, simultaneous: nil, loss: lossInput)
        if let simultaneousFirst, let simultaneousSecond {
            input.simultaneous = (simultaneousFirst, simultaneousSecond)
        }
        var summary = try analyzer.analyze(
            input, seed: AnalysisRunner.seed(test: TestKey(userID: userID, historyCount: h1), comparedTestID: h2))
        if !notes.isEmpty {
            summary.note = (notes + [summary.note].compactMap { $0 }).joined(separator: "; ")
            context.logger.notice(
                "localization ran with missing pieces",
                metadata: [
                    "wehe.user.history": "\(h1),\(h2)", "wehe.verdict": "\(summary.verdict.rawValue)",
                    "wehe.reason": "\(notes.joined(separator: "; "))",
                ])
        }
        if context.configuration.mergePointProbe != nil {
            summary.mergePointQueue = await mergePointQueue(
                userID: userID, historyCounts: [h1, h2], servers: servers)
        }
        let run = LocalizationRun(
            userID: userID,
            historyCounts: [h1, h2],
            servers: servers,
            replayName: replayName,
            singleServer: single["singleReplay_server"].flatMap(Self.stringValue),
            singleHistoryCount: singleCount,
            requestedAt: context.configuration.now(),
            summary: summary
        )
        try await store.save(localization: run)
        context.configuration.archive?.archive(
            localization: ArchiveWriter.Localization(
                userID: userID, historyCounts: [h1, h2], singleHistoryCount: singleCount,
                simultaneous: input.simultaneous.map { [$0.0, $0.1] }, single: singleSamples, summary: summary))
        return Answer(status: 200, body: #"{"success": true}"#)
    }

    /// The merge-point queue signal (only with `--merge-point-probe`): each simultaneous
    /// replay's probe delays, ours from memory and the other's from its server (`mergePointProbes`), through
    /// `MergePointQueueTest`. The client asks `localize` only after both servers' replays showed differentiation (the
    /// published gate), so the verdict is taken with the gate passed, as the published localization's.
    private func mergePointQueue(
        userID: String, historyCounts: [Int], servers: [String]
    ) async -> MergePointQueueSummary {
        var notes: [String] = []
        var branches: [MergePointQueueTest.Branch?] = []
        for (historyCount, server) in zip(historyCounts, servers) {
            let key = ReplayKey(userID: userID, historyCount: historyCount, testID: 0)
            var record = context.mergePointProbes.record(key)
            if record == nil, !server.isEmpty, context.fleetPeers.contains(FleetAuthenticator.hostName(server)) {
                switch await context.peerMeasurements.mergePointProbes(
                    host: server, userID: userID, historyCount: historyCount)
                {
                case .success(let answer): record = answer
                case .failure(let error): notes.append(error.message)
                }
            }
            guard let record else {
                notes.append("no merge-point probes of historyCount \(historyCount)")
                branches.append(nil)
                continue
            }
            if let note = record.note { notes.append("historyCount \(historyCount): \(note)") }
            do {
                let branch = try MergePointQueueTest.branch(
                    flowToMergePoint: record.flowToMergePoint, baselineToMergePoint: record.baselineToMergePoint,
                    flowToClient: record.flowToClient, baselineToClient: record.baselineToClient)
                if branch == nil {
                    // An unthrottled replay may end before the first probe (one per 1.05 s).
                    notes.append(
                        "historyCount \(historyCount): too few probes (\(record.flowToMergePoint.count) in-flow, "
                            + "\(record.baselineToMergePoint.count) baseline to the merge point)")
                }
                branches.append(branch)
            } catch {
                notes.append("historyCount \(historyCount): \(error.message)")
                branches.append(nil)
            }
        }
        let verdict = MergePointQueueTest.verdict(
            bothDifferentiated: true, first: branches[0], second: branches[1])
        return MergePointQueueSummary(
            first: branches[0], second: branches[1], verdict: verdict,
            note: notes.isEmpty ? nil : notes.joined(separator: "; "))
    }

    /// `merge_point_queue` of `localizeResult` (our extension, outside `localization_tests`).
    static func mergePointQueueJSON(_ summary: MergePointQueueSummary) -> JSONValue {
        func comparison(_ value: MergePointQueueSummary.Comparison?) -> JSONValue {
            guard let value else { return .null }
            return .object([
                ("pValue", number(value.pValue)), ("extraDelay", number(value.extraDelay)),
                ("significant", .bool(value.significant)),
            ])
        }
        func branch(_ value: MergePointQueueSummary.Branch?) -> JSONValue {
            guard let value else { return .null }
            return .object([
                ("mergePoint", comparison(value.mergePoint)), ("path", comparison(value.path)),
                ("flowProbes", .number(Double(value.flowProbes), text: String(value.flowProbes))),
                ("flowUnanswered", .number(Double(value.flowUnanswered), text: String(value.flowUnanswered))),
            ])
        }
        var members: [(String, JSONValue)] = [
            ("verdict", .string(summary.verdict.rawValue)),
            ("branches", .array([branch(summary.first), branch(summary.second)])),
        ]
        if let note = summary.note { members.append(("note", .string(note))) }
        return .object(members)
    }

    private func localizeResult(_ parameters: [String: String]) async throws -> Answer {
        let userID = try Self.userID(parameters)
        guard let text = parameters["historyCounts"] else { throw ParameterError.missing("historyCounts") }
        let counts = text.trimmingCharacters(in: CharacterSet(charactersIn: "[] "))
            .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard counts.count == 2 else { throw ParameterError.value("historyCounts must be [H1, H2]") }
        guard let run = try await store.localization(userID: userID, historyCounts: counts), let summary = run.summary
        else {
            return notFound
        }
        var response: [(String, JSONValue)] = [
            ("userID", .string(userID)),
            ("historyCounts", .array(counts.map { .number(Double($0), text: String($0)) })),
            ("testID", .string(parameters["testID"] ?? "0")),
        ]
        var tests: [JSONValue] = []
        if let u = summary.mwuStatistic, let p = summary.mwuPValue {
            tests.append(.string("pairsum_vs_single_xput"))
            response.append(
                (
                    "pairsum_vs_single_xput",
                    .object([
                        ("mwuVal", Self.number(u)), ("mwuPVal", Self.number(p)),
                        ("simReplaysAvgXput", .array(summary.simultaneousMeansMbps.map(Self.number))),
                        ("simReplaySumAvgXput", Self.number(summary.sumMeanMbps ?? 0)),
                        ("singleReplayAvgXput", Self.number(summary.singleMeanMbps ?? 0)),
                    ])
                ))
        }
        // The loss test ran when it reports the branches' average loss, even without a usable p-value
        // (analysis.md 6.4 item 8: no loss at all gives empty lists).
        if !summary.averageLoss.isEmpty {
            tests.append(.string("loss_correlation"))
            response.append(
                (
                    "loss_correlation",
                    .object([
                        ("intervalSizes", .array(summary.intervalSizes.map(Self.number))),
                        ("corrPValues", .array(summary.correlationPValues.map(Self.number))),
                        ("simReplaysAvgLoss", .array(summary.averageLoss.map(Self.number))),
                    ])
                ))
        }
        response.insert(("localization_tests", .array(tests)), at: 3)
        if let note = summary.note { response.append(("note", .string(note))) }
        if let queue = summary.mergePointQueue {
            response.append(("merge_point_queue", Self.mergePointQueueJSON(queue)))
        }
        return Answer(status: 200, body: Self.object([("success", .bool(true)), ("response", .object(response))]))
    }

    /// `getMeasurements` (protocol.md 12 step 6), for fleet members only: `clientXputs` (the client's throughput
    /// samples), `minRttAndDuration` and `lossRatios` (the server's loss timeline; README "WeHeY measurements"), and
    /// our extension `mergePointProbes` (the replay's merge-point probe delays, `--merge-point-probe`).
    private func measurements(_ parameters: [String: String], caller: Caller) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        guard let type = parameters["measurementType"] else { throw ParameterError.missing("measurementType") }
        guard ["clientXputs", "minRttAndDuration", "lossRatios", "mergePointProbes"].contains(type) else {
            return failure("unknown measurement type \(type)")
        }
        if case .anonymous(let reason) = caller {
            return Answer(
                status: 403,
                body: Self.object([
                    ("success", .bool(false)),
                    ("error", .string("getMeasurements answers only servers of this fleet: \(reason)")),
                ]))
        }
        let replayKey = ReplayKey(userID: userID, historyCount: historyCount, testID: testID)
        let result: JSONValue
        let resultType: String
        switch type {
        case "clientXputs":
            guard let replay = try await store.test(replayKey.test)?.replay(testID) else { return notFound }
            result = .array([
                .array(replay.samples.mbps.map(Self.number)), .array(replay.samples.times.map(Self.number)),
            ])
            resultType = "list"
        case "minRttAndDuration":
            guard let loss = try await store.loss(replayKey) else { return noLossTimeline }
            guard let rtt = loss.minimumRTT else { return failure("No RTT was measured on this replay") }
            let sent = loss.samples.reduce(0) { $0 + $1.bytesSent }
            let lost = loss.samples.reduce(0) { $0 + $1.bytesLost }
            result = .object([
                ("minRtt", Self.number(rtt)), ("duration", Self.number(loss.duration)),
                ("averageLoss", Self.number(sent > 0 ? lost / sent : 0)),
                ("readings", .number(Double(loss.samples.count), text: String(loss.samples.count))),
                ("source", .string(loss.source.rawValue)),
            ])
            resultType = "dict"
        case "mergePointProbes":
            guard let probes = context.mergePointProbes.record(replayKey) else {
                return failure(
                    "No merge-point probes for this replay (the server probes only with --merge-point-probe)")
            }
            result = Self.mergePointProbes(probes)
            resultType = "dict"
        default:
            guard let loss = try await store.loss(replayKey) else { return noLossTimeline }
            let kwargs = parameters["kwargs"].flatMap { try? JSONValue.parse(Array($0.utf8)) }
            if kwargs?["resolution"] == .string("readings") {
                result = Self.frame(
                    columns: ["time", "bytesSent", "bytesLost"],
                    rows: loss.samples.map { [$0.time, $0.bytesSent, $0.bytesLost] })
            } else {
                var sizes = LossMeasurements.intervalSizes(loss)
                if case .array(let requested)? = kwargs?["intervalSizes"] {
                    sizes = requested.compactMap { value -> Double? in
                        guard case .number(let size, _) = value, size.isFinite, size >= 0.001 else { return nil }
                        return size
                    }
                    guard sizes.count == requested.count, sizes.count <= 64 else {
                        throw ParameterError.value("intervalSizes must be at most 64 numbers ≥ 0.001 (seconds)")
                    }
                }
                let rows = try LossMeasurements.intervalRatios(loss, sizes: sizes)
                result = Self.frame(
                    columns: ["intervalSize", "intervalEnd", "lossRatio"],
                    rows: rows.map { [$0.size, $0.end, $0.ratio] })
            }
            resultType = "DataFrame"
        }
        return Answer(
            status: 200,
            body: Self.object([
                ("success", .bool(true)),
                (
                    "measurements",
                    .object([("type", .string(type)), ("resultType", .string(resultType)), ("result", result)])
                ),
            ])
        )
    }

    /// A replay's merge-point probe delays as `getMeasurements` answers them: seconds, `null` for no answer.
    static func mergePointProbes(_ record: MergePointProbeRecord) -> JSONValue {
        func delays(_ values: [Double?]) -> JSONValue { .array(values.map { $0.map(number) ?? .null }) }
        var members: [(String, JSONValue)] = [
            ("mergeTTL", .number(Double(record.mergeTTL), text: String(record.mergeTTL))),
            ("flowToMergePoint", delays(record.flowToMergePoint)),
            ("baselineToMergePoint", delays(record.baselineToMergePoint)),
            ("flowToClient", delays(record.flowToClient)),
            ("baselineToClient", delays(record.baselineToClient)),
        ]
        if let note = record.note { members.append(("note", .string(note))) }
        return .object(members)
    }

    private var noLossTimeline: Answer {
        failure(
            "No loss timeline for this replay (servers without TCP_INFO keep none; a UDP replay has one once its client "
                + "reported the datagrams it received)")
    }

    /// A data frame as `{"columns": [...], "data": [[...], ...]}`.
    static func frame(columns: [String], rows: [[Double]]) -> JSONValue {
        .object([
            ("columns", .array(columns.map { .string($0) })),
            ("data", .array(rows.map { .array($0.map(number)) })),
        ])
    }

    // MARK: helpers

    private var notFound: Answer { failure("No result found") }

    private func failure(_ message: String) -> Answer {
        Answer(status: 200, body: AnalyzerFailure(message: message).body)
    }

    struct ParameterError: Error {
        var answer: Answer
        static func missing(_ name: String) -> ParameterError {
            ParameterError(
                answer: Answer(
                    status: 200, body: object([("success", .bool(false)), ("missing", .string("'\(name)'"))])))
        }
        static func value(_ message: String) -> ParameterError {
            ParameterError(
                answer: Answer(
                    status: 200, body: object([("success", .bool(false)), ("value error", .string(message))])))
        }
    }

    static func userID(_ parameters: [String: String]) throws(ParameterError) -> String {
        guard let value = parameters["userID"] else { throw .missing("userID") }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard IDDeclaration.isValidUserID(trimmed) else { throw .value("userID is not a valid user id") }
        return trimmed
    }

    static func integer(_ parameters: [String: String], _ name: String) throws(ParameterError) -> Int {
        guard let value = parameters[name] else { throw .missing(name) }
        guard let number = Int(value.trimmingCharacters(in: .whitespaces)), number >= 0 else {
            throw .value("invalid literal for int() with base 10: '\(value.prefix(20))'")
        }
        return number
    }

    static func jsonObject(_ parameters: [String: String], _ name: String) throws(ParameterError) -> JSONValue {
        guard let value = parameters[name] else { throw .missing(name) }
        guard let parsed = try? JSONValue.parse(Array(value.utf8)), case .object = parsed else {
            throw .value("\(name) is not a JSON object")
        }
        return parsed
    }

    static func intValue(_ value: JSONValue) -> Int? {
        switch value {
        case .string(let text): Int(text)
        case .number(let number, _): Int(exactly: number)
        default: nil
        }
    }

    static func stringValue(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(_, let text): text
        default: nil
        }
    }

    static func number(_ value: Double) -> JSONValue {
        value.isFinite ? .number(value, text: "\(value)") : .string("\(value)")
    }

    static func object(_ members: [(String, JSONValue)]) -> String { JSONValue.object(members).serialized() }

    /// `YYYY-MM-DD HH:MM:SS` in UTC.
    static func dateText(_ date: Date) -> String {
        var seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(year)-\(two(month))-\(two(day)) \(two(seconds / 3600)):\(two(seconds % 3600 / 60)):\(two(seconds % 60))"
    }
}
