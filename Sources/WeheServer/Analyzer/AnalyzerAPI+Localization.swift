import Foundation
import WeheAnalysis
import WeheCore
import WeheStore
import WeheWire

/// WeHeY's analyzer commands (protocol.md 12): `localize` (this server asks its pair for their measurements and
/// decides), `localizeResult`, and `getMeasurements` (what a fleet peer asks of this server), with their JSON frames.
extension AnalyzerAPI {
    func localize(_ parameters: [String: String], clientAddress: String) async throws -> Answer {
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
    func mergePointQueue(
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

    func localizeResult(_ parameters: [String: String]) async throws -> Answer {
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
    func measurements(_ parameters: [String: String], caller: Caller) async throws -> Answer {
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
}
