import Foundation
import NIOSSL
import WeheAnalysis
import WeheCore
import WeheReplay
import WeheStore
import WeheWire

/// Finds the bytes a DPI classifier matches (analysis.md section 5): after a test found differentiation, replays the
/// test's original trace again and again with one region of one packet inverted (all 8 bits of each byte; a client
/// packet by the client, a server packet by the server through the change spec), each probe with a new testID of
/// the same history count, and compares it with that test's original (testID 0) as a normal analysis: a probe whose
/// verdict is *differentiation* broke the classification (inconclusive counts as not broken).
///
/// The search stops on its limits (10 packets, 200 probes), and before a probe that could exceed the data budget.
/// With a store configured, the probes (replays and analyses, testID ≥ 2) are added to the test's record.
public struct DPIClient: Sendable {
    /// The client whose configuration (server, ports, TLS, rules, store) the probes use.
    public let client: ReplayClient
    /// The provider named in `DPIanalysis` (`carrierName`).
    public var carrierName: String

    /// Creates a DPI client.
    public init(client: ReplayClient, carrierName: String = "unknown") {
        self.client = client
        self.carrierName = carrierName
    }

    /// Runs the search against the original of `result` (a test of `test` that this client ran).
    /// - Parameters:
    ///   - test: the test (its original trace is probed).
    ///   - result: the finished test; its history count's original replay is the reference.
    ///   - options: method, limits, budget, early stop.
    ///   - onEvent: progress, from any thread.
    /// - Throws: `ReplayClientError` (network, analyzer, a probe the trace cannot hold, `.cancelled`).
    public func search(
        _ test: ReplayClient.Test,
        after result: TestResult,
        options: DPIOptions = DPIOptions(),
        onEvent: @escaping @Sendable (DPIEvent) -> Void = { _ in }
    ) async throws(ReplayClientError) -> DPISearchResult {
        let clock = ContinuousClock()
        let started = clock.now
        let startedAt = Date()
        let configuration = client.configuration
        let address = try client.resolveServer()
        let tls = try client.makeTLS()
        let map = DPITraceMap(trace: test.original)
        var driver: any DPIDriver
        switch options.method {
        case .local: driver = try LocalDPIDriver(map: map, configuration: options.search)
        case .binary: driver = try BinaryDPIDriver(map: map, configuration: options.search)
        case .server:
            driver = ServerDPIDriver(
                analyzer: client.analyzerClient(address: address, tls: tls),
                key: DPISearchKey(
                    userID: configuration.userID, carrierName: carrierName, replayName: test.original.name),
                historyCount: result.historyCount)
        }
        let perProbe = Self.expectedProbeBytes(test, result)
        let deadline = options.earlyStop ? Self.earlyStopDeadline(result) : nil
        let (conclusion, probes, used) = try await Self.drive(
            &driver, options: options, perProbeBytes: perProbe, onEvent: onEvent
        ) { probe, mask, number, testID throws(ReplayClientError) in
            try await runProbe(
                probe, mask: mask, number: number, testID: testID, map: map, test: test, reference: result,
                address: address, tls: tls, deadline: deadline,
                onProgress: { onEvent(.probeProgress(number: number, bytesReceived: $0.bytesReceived)) })
        }
        let search = DPISearchResult(
            test: test.entry.id, replayName: test.original.name, userID: configuration.userID,
            historyCount: result.historyCount, method: options.method, earlyStop: options.earlyStop,
            conclusion: conclusion, probes: probes, bytes: used,
            durationSeconds: started.duration(to: clock.now).inSeconds, startedAt: startedAt)
        try await store(search, map: map)
        return search
    }

    /// The search loop: asks the driver for probes, stops before a probe that could exceed the budget, runs each
    /// probe with `probe` (a replay and its analysis; a simulated classifier in tests) and reports it back.
    /// - Returns: the conclusion, the probes run and the bytes they used.
    static func drive(
        _ driver: inout any DPIDriver,
        options: DPIOptions,
        perProbeBytes: Int,
        onEvent: @escaping @Sendable (DPIEvent) -> Void,
        probe runProbe: (DPIProbe, [Range<Int>], Int, Int) async throws(ReplayClientError) -> DPIProbeResult
    ) async throws(ReplayClientError) -> (DPIConclusion, [DPIProbeResult], Int) {
        var testID = options.firstTestID
        var step = try await driver.start(testID: testID)
        var probes: [DPIProbeResult] = []
        var used = 0
        while true {
            switch step {
            case .done(let conclusion):
                return (conclusion, probes, used)
            case .probe(let probe, let mask):
                if let budget = options.budgetBytes, used + perProbeBytes > budget {
                    return (.budgetExhausted(usedBytes: used, budgetBytes: budget), probes, used)
                }
                if Task.isCancelled { throw ReplayClientError(.cancelled, "the DPI search was cancelled") }
                let number = probes.count + 1
                onEvent(.probeStarted(number: number, probe: probe, testID: testID, bytesSoFar: used))
                let result = try await runProbe(probe, mask, number, testID)
                used += result.bytes
                probes.append(result)
                onEvent(.probeFinished(result, bytesSoFar: used))
                testID += 1
                step = try await driver.record(result, nextTestID: testID)
            }
        }
    }

    /// What one probe is expected to cost: the test's original replay (sent and received), else the trace's bytes.
    static func expectedProbeBytes(_ test: ReplayClient.Test, _ result: TestResult) -> Int {
        if let original = result.original { return original.bytesSent + original.bytesReceived }
        return test.original.bytesUp + test.original.bytesDown
    }

    /// The early stop's replay deadline: twice the control replay's duration, at least ten sample intervals (the
    /// analysis needs five positive samples per replay), `nil` without a control.
    static func earlyStopDeadline(_ result: TestResult) -> Duration? {
        guard let control = result.control else { return nil }
        let interval = result.original?.sampleInterval ?? control.sampleInterval
        return max(control.duration * 2, interval * 10)
    }

    /// One probe: the original trace with the region inverted, testID `testID`, then the analysis against testID 0.
    func runProbe(
        _ probe: DPIProbe,
        mask: [Range<Int>],
        number: Int,
        testID: Int,
        map: DPITraceMap,
        test: ReplayClient.Test,
        reference: TestResult,
        address: String,
        tls: NIOSSLContext?,
        deadline: Duration?,
        onProgress: @escaping @Sendable (ReplayProgress) -> Void
    ) async throws(ReplayClientError) -> DPIProbeResult {
        let clock = ContinuousClock()
        let started = clock.now
        let replay = try map.probeReplay(probe, mask: mask)
        var configuration = client.configuration
        if let deadline { configuration.timing.replayDeadline = deadline }
        let prober = ReplayClient(configuration: configuration)
        var realIP = "127.0.0.1"
        if replay.trace.transport == .tcp, prober.discoversAddress(address),
            let port = replay.trace.flows.first?.serverPort,
            let ip = try await prober.whatsMyIP(address: address, port: Int(port)), ip != "127.0.0.1"
        {
            realIP = ip
        }
        let declaration = IDDeclaration(
            userID: configuration.userID, testID: testID, replayName: test.original.name,
            extraString: configuration.extraString, historyCount: reference.historyCount, endOfTest: true,
            realIP: realIP, clientVersion: configuration.clientVersion)
        var session = ReplaySession(
            serverAddress: address, configuration: configuration,
            tls: configuration.sideChannelTLS ? tls : nil, declaration: declaration, trace: replay.trace,
            appDuration: test.entry.durationSeconds, onProgress: onProgress)
        session.changeSpec = replay.changeSpec
        let outcome = try await session.run().outcome
        let summary = try await prober.analysis(
            address: address, tls: tls, historyCount: reference.historyCount,
            originalSamples: reference.originalSamples, controlSamples: outcome.samples, testID: testID)
        return DPIProbeResult(
            number: number, probe: probe, mask: mask, testID: testID, summary: summary,
            classificationBroke: summary.verdict == .differentiation,
            bytes: outcome.bytesSent + outcome.bytesReceived,
            seconds: started.duration(to: clock.now).inSeconds,
            stoppedEarly: deadline != nil && outcome.reachedDeadline, samples: outcome.samples)
    }

    /// Records the search in the history: the probes (replays with their testIDs and analyses against testID 0; the
    /// last analysis's note carries the conclusion) are added to the test's record, and the search itself is stored
    /// as a finished DPI search (`DPIResultRecord`: outcome, rules with their bytes and packet, probes, bytes).
    func store(_ search: DPISearchResult, map: DPITraceMap) async throws(ReplayClientError) {
        guard let store = client.configuration.store else { return }
        let key = TestKey(userID: search.userID, historyCount: search.historyCount)
        let now = Date()
        do {
            if !search.probes.isEmpty, var record = try await store.test(key) {
                for (index, probe) in search.probes.enumerated() {
                    record.replays.removeAll { $0.key.testID == probe.testID }
                    record.analyses.removeAll { $0.comparedTestID == probe.testID }
                    record.replays.append(
                        ReplayRecord(
                            key: key.replay(probe.testID), replayName: search.replayName,
                            samples: probe.samples.droppingLastSample(), receivedAt: now, clientDurationSeconds: nil))
                    var summary = probe.summary
                    var note = "DPI probe \(probe.number) (\(search.method.rawValue)): \(probe.probe) "
                    note += probe.classificationBroke ? "T" : "F"
                    if index == search.probes.count - 1 { note += "; search: " + DPIReport.conclusionLine(search) }
                    summary.note = note
                    record.analyses.append(
                        AnalysisRecord(test: key, comparedTestID: probe.testID, summary: summary, analysedAt: now))
                }
                try await store.save(test: record)
            }
            try await store.finish(dpiSearch: Self.resultRecord(search, carrierName: carrierName, map: map, now: now))
        } catch {
            throw ReplayClientError(.storeFailed, "cannot record the DPI search in \(store.databaseName): \(error)")
        }
    }

    /// The history's record of a finished search. `outcome` is `rule` or the no-rule reason of `DPINoRuleReason`;
    /// the client adds `budgetExhausted` (stopped by `--budget`).
    static func resultRecord(_ search: DPISearchResult, carrierName: String, map: DPITraceMap, now: Date)
        -> DPIResultRecord
    {
        var outcome: String
        var rules: [DPIFoundRule] = []
        switch search.conclusion {
        case .rules(let findings):
            outcome = "rule"
            rules = findings.map { finding in
                DPIFoundRule(
                    packet: finding.packet.description, left: finding.region.lowerBound,
                    right: finding.region.upperBound, content: finding.content ?? [],
                    matchingBytes: finding.matchingBytes, packetPayload: map.payload(of: finding.packet))
            }
        case .noContentRule(let why):
            outcome =
                why.hasPrefix("NO DPI for first")
                ? DPINoRuleReason.noDPIInFirstPackets.rawValue : DPINoRuleReason.packetsExhausted.rawValue
        case .probeLimit: outcome = DPINoRuleReason.probeLimitReached.rawValue
        case .budgetExhausted: outcome = "budgetExhausted"
        }
        return DPIResultRecord(
            id: DPISearchID(userID: search.userID, carrierName: carrierName, replayName: search.replayName),
            historyCount: search.historyCount, startedAt: search.startedAt, finishedAt: now,
            probes: search.probes.count, bytesUsed: search.bytes, outcome: outcome,
            message: DPIReport.conclusionLine(search), rules: rules)
    }
}

/// Texts for a finished search.
public enum DPIReport {
    /// One line: `rule C_1[156,163) "pandora" (hex 70616e646f7261)`, `no content rule (…)`, ….
    public static func conclusionLine(_ search: DPISearchResult) -> String {
        switch search.conclusion {
        case .rules(let findings):
            return findings.map { finding in
                var text = "rule \(finding.packet)[\(finding.region.lowerBound),\(finding.region.upperBound))"
                if let shown = finding.text, let hex = finding.hex { text += " \"\(shown)\" (hex \(hex))" }
                return text
            }.joined(separator: "; ")
        case .noContentRule(let why): return "no content rule (\(why))"
        case .probeLimit(let probes): return "no rule: probe limit reached after \(probes) probes"
        case .budgetExhausted(let used, let budget):
            return "stopped: the next probe could exceed the data budget (\(used) of \(budget) bytes used)"
        }
    }

    /// One JSON object for the search (`wehe dpi --json`): `dpi` (the test), `replayName`, `historyCount`,
    /// `method`, `earlyStop`, `result` (`DPIConclusion.code`), `rules` (packet, left, right, hex, text, matchingBytes,
    /// runs), `message` (without a rule), `probeCount`, `bytes`, `durationSeconds`, `probes` (one object each).
    public static func json(_ search: DPISearchResult) -> String {
        func int(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        var rules: [JSONValue] = []
        var message: String?
        switch search.conclusion {
        case .rules(let findings):
            rules = findings.map { finding in
                .object([
                    ("packet", .string(finding.packet.description)), ("left", int(finding.region.lowerBound)),
                    ("right", int(finding.region.upperBound)), ("hex", finding.hex.map(JSONValue.string) ?? .null),
                    ("text", finding.text.map(JSONValue.string) ?? .null),
                    ("matchingBytes", .array(finding.matchingBytes.map(int))),
                    ("runs", .array(finding.runs.map { .array([int($0.lowerBound), int($0.upperBound)]) })),
                ])
            }
        default:
            message = DPIReport.conclusionLine(search)
        }
        let probes: [JSONValue] = search.probes.map { probe in
            .object([
                ("number", int(probe.number)), ("packet", .string(probe.probe.packet.description)),
                ("left", int(probe.probe.region.lowerBound)), ("right", int(probe.probe.region.upperBound)),
                ("mask", .array(probe.mask.map { .array([int($0.lowerBound), int($0.upperBound)]) })),
                ("testID", int(probe.testID)), ("diff", .string(probe.classificationBroke ? "T" : "F")),
                ("verdict", .string(probe.summary.verdict.rawValue)),
                ("originalMeanMbps", number(probe.summary.originalMeanMbps)),
                ("probeMeanMbps", number(probe.summary.controlMeanMbps)), ("bytes", int(probe.bytes)),
                ("seconds", number(probe.seconds)), ("stoppedEarly", .bool(probe.stoppedEarly)),
            ])
        }
        return JSONValue.object([
            ("dpi", .string(search.test)), ("replayName", .string(search.replayName)),
            ("historyCount", int(search.historyCount)), ("method", .string(search.method.rawValue)),
            ("earlyStop", .bool(search.earlyStop)), ("result", .string(search.conclusion.code)),
            ("rules", .array(rules)), ("message", message.map(JSONValue.string) ?? .null),
            ("probeCount", int(search.probes.count)), ("bytes", int(search.bytes)),
            ("durationSeconds", number(search.durationSeconds)), ("probes", .array(probes)),
        ]).serialized()
    }
}
