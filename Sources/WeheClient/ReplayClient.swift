import Foundation
import Logging
import NIOCore
import NIOSSL
import WeheAnalysis
public import WeheCore
import WeheReplay
import WeheStore
public import WeheWire

/// The client library's entry point: runs complete differentiation tests against a Wehe server (ours or the
/// published wehe-py3) and reports progress and verdicts.
///
/// A test is two replays in random order (the original, then the bit-inverted control or port 443 — or the other
/// way round), each over its own side channel, then the analyzer's numbers, turned into a verdict by the configured
/// rule. A differentiation or inconclusive verdict triggers one confirmation test (a new history count) whose
/// verdict replaces the first. Port tests whose port cannot be reached are "blocked" without an analysis. A
/// finished test is written to the configured store in one transaction; a failed or cancelled one writes nothing.
public struct ReplayClient: Sendable {
    /// The configuration.
    public let configuration: ReplayClientConfiguration

    /// Creates a client.
    public init(configuration: ReplayClientConfiguration) {
        self.configuration = configuration
    }

    /// One test to run: its catalog entry and both traces.
    public struct Test: Sendable {
        /// The catalog entry.
        public var entry: CatalogEntry
        /// The original trace (`Youtube-…`, `port_853`).
        public var original: ReplayTrace
        /// The control trace (`YoutubeRandom-…`, `port_443`).
        public var control: ReplayTrace

        /// Creates a test.
        public init(entry: CatalogEntry, original: ReplayTrace, control: ReplayTrace) {
            self.entry = entry
            self.original = original
            self.control = control
        }

        /// Loads a catalog test and its two traces from a replay directory.
        /// - Throws: `ReplayClientError` `.missingTrace` (no such test, file missing) or `.invalidInput`.
        public static func load(_ id: String, from library: ReplayLibrary, catalog: AppCatalog)
            throws(ReplayClientError)
            -> Test
        {
            guard let entry = catalog.entry(named: id) else {
                throw ReplayClientError(.missingTrace, "no test named '\(id)' in the catalog")
            }
            guard let controlFile = catalog.controlFile(for: entry) else {
                throw ReplayClientError(.missingTrace, "the catalog names no control trace for '\(entry.id)'")
            }
            func trace(_ file: String) throws(ReplayClientError) -> ReplayTrace {
                let trace: ReplayTrace
                do {
                    trace = try library.trace(file: file)
                } catch {
                    throw ReplayClientError(
                        error.code == .unreadable ? .missingTrace : .invalidInput, "trace: \(error.description)")
                }
                if let problem = trace.problems().first {
                    throw ReplayClientError(.invalidInput, "trace \(library.path(of: file)): \(problem)")
                }
                return trace
            }
            return Test(entry: entry, original: try trace(entry.originalFile), control: try trace(controlFile))
        }
    }

    /// Runs one complete test (and its confirmation, when needed).
    /// - Parameters:
    ///   - test: the test.
    ///   - onEvent: progress, called from any thread; keep it short.
    /// - Returns: the final result (already stored when a store is configured).
    /// - Throws: `ReplayClientError`; nothing is stored then.
    public func run(
        _ test: Test,
        onEvent: @escaping @Sendable (ReplayClientEvent) -> Void = { _ in }
    ) async throws(ReplayClientError) -> TestResult {
        let clock = ContinuousClock()
        let started = clock.now
        var flow = ConfirmationFlow(rule: ConfirmationRule(enabled: configuration.confirmation))
        var firstVerdict: Verdict?
        var isConfirmation = false
        while true {
            let historyCount: Int
            do {
                historyCount = try await configuration.historyCounter.next()
            } catch {
                throw ReplayClientError(.storeFailed, "cannot get the next test number: \(error)")
            }
            onEvent(.testStarted(test: test.entry.id, historyCount: historyCount, isConfirmation: isConfirmation))
            var result: TestResult
            do {
                result = try await runOnce(test, historyCount: historyCount, onEvent: onEvent)
            } catch  where Task.isCancelled {
                // Whatever a cancelled step reported (a connection closed under it), the cause is the cancellation.
                throw ReplayClientError(.cancelled, "the test was cancelled")
            }
            let step: ConfirmationFlow.Step
            do {
                step = try flow.record(result.summary)
            } catch {
                throw ReplayClientError(.invalidInput, "confirmation flow: \(error)")
            }
            if case .runTest(true) = step {
                firstVerdict = result.verdict
                isConfirmation = true
                onEvent(
                    .confirmationScheduled(test: test.entry.id, firstVerdict: result.verdict, first: result.summary))
                continue
            }
            result.confirmed = isConfirmation
            result.firstVerdict = firstVerdict
            result.durationSeconds = started.duration(to: clock.now).inSeconds
            try await store(result)
            onEvent(.testFinished(result))
            return result
        }
    }

    /// One run: both replays, then the analysis (or the blocked shortcut).
    func runOnce(
        _ test: Test,
        historyCount: Int,
        onEvent: @escaping @Sendable (ReplayClientEvent) -> Void
    ) async throws(ReplayClientError) -> TestResult {
        let address = try resolveServer()
        let tls = try makeTLS()
        let startedAt = Date()
        let order: [ReplayRole]
        switch configuration.replayOrder {
        case .random: order = Bool.random() ? [.original, .control] : [.control, .original]
        case .originalFirst: order = [.original, .control]
        case .controlFirst: order = [.control, .original]
        }
        var outcomes: [ReplayRole: ReplayOutcome] = [:]
        var blockedPort: Int?
        var publicAddress: String?
        var serverAS: ASTable.Entry?
        let id = test.entry.id
        for (offset, role) in order.enumerated() {
            let trace = role == .original ? test.original : test.control
            let isTestedPort = test.entry.isPortTest && role == .original
            var realIP = "127.0.0.1"
            if trace.transport == .tcp, discoversAddress(address), let port = trace.flows.first?.serverPort {
                if let ip = try await whatsMyIP(address: address, port: Int(port)) {
                    if ip != "127.0.0.1" {
                        realIP = ip
                        publicAddress = ip
                    }
                } else if isTestedPort {
                    blockedPort = Int(port)
                    onEvent(.portBlocked(test: id, port: Int(port)))
                    continue
                }
            }
            let declaration = IDDeclaration(
                userID: configuration.userID, testID: role.rawValue, replayName: trace.name,
                extraString: configuration.extraString, historyCount: historyCount,
                endOfTest: offset == order.count - 1,
                realIP: realIP, clientVersion: configuration.clientVersion)
            onEvent(.replayStarted(test: id, role: role, replayName: trace.name, position: offset + 1))
            let session = ReplaySession(
                serverAddress: address, configuration: configuration, tls: configuration.sideChannelTLS ? tls : nil,
                declaration: declaration, trace: trace, appDuration: test.entry.durationSeconds,
                onProgress: { onEvent(.replayProgress(test: id, role: role, progress: $0)) })
            do {
                let outcome = try await session.run()
                outcomes[role] = outcome.outcome
                if configuration.reportsDatagrams, let received = outcome.receivedDatagrams {
                    let refusal = try? await reportDatagrams(
                        received, address: address, tls: tls, historyCount: historyCount, testID: role.rawValue)
                    if let refusal {
                        configuration.logger.notice(
                            "UDP loss report not taken", metadata: ["wehe.reason": "\(refusal)"])
                    }
                }
                onEvent(.replayFinished(test: id, role: role, outcome: outcome.outcome))
            } catch let error
                where isTestedPort && error.code == .unreachable && error.replayError?.code == .connectFailed
            {
                let port = trace.flows.first.map { Int($0.serverPort) } ?? 0
                blockedPort = port
                onEvent(.portBlocked(test: id, port: port))
            }
        }
        let original = outcomes[.original]
        let control = outcomes[.control]
        let summary: AnalysisSummary
        if let blockedPort {
            // The server drops the last, partial sample; a control faster than one interval keeps only that one.
            let controlMean =
                control.flatMap { $0.samples.droppingLastSample().meanMbps ?? $0.samples.meanMbps } ?? 0
            let thresholds = configuration.verdictRules.appliedThresholds(
                originalMeanMbps: 0, controlMeanMbps: controlMean)
            summary = AnalysisSummary(
                areaTest: -1, ks2RatioTest: -1, originalMeanMbps: 0, controlMeanMbps: controlMean, ksStatistic: -1,
                ksPValue: -1, verdict: .blocked, direction: .throttled, thresholds: thresholds,
                note: "port \(blockedPort) could not be reached")
        } else {
            onEvent(.analysisRequested(test: id, historyCount: historyCount))
            summary = try await analysis(
                address: address, tls: tls, historyCount: historyCount, originalSamples: original?.samples,
                controlSamples: control?.samples, serverAS: { serverAS = $0 })
        }
        var result = TestResult(
            test: id, name: test.entry.name, replayName: test.original.name, controlReplayName: test.control.name,
            isPortTest: test.entry.isPortTest,
            userID: configuration.userID, historyCount: historyCount, summary: summary,
            originalSamples: original?.samples ?? ThroughputSeries(mbps: [], times: []),
            controlSamples: control?.samples ?? ThroughputSeries(mbps: [], times: []),
            original: original, control: control, confirmed: false, firstVerdict: nil, durationSeconds: 0,
            bytesReceived: (original?.bytesReceived ?? 0) + (control?.bytesReceived ?? 0), startedAt: startedAt)
        result.network = network(serverAddress: address, publicAddress: publicAddress, serverAS: serverAS)
        return result
    }

    /// Asks the server for the client's public address on a replay port; `nil` when the port does not answer.
    func whatsMyIP(address: String, port: Int) async throws(ReplayClientError) -> String? {
        let http = HTTPClient(
            tls: nil, connectTimeout: min(configuration.timing.connect, .seconds(3)),
            requestTimeout: min(configuration.timing.httpRequest, .seconds(5)))
        for attempt in 1...max(1, configuration.timing.addressAttempts) {
            do {
                let response = try await http.request(
                    method: .GET, host: address, port: port, path: "/WHATSMYIPMAN", what: "WHATSMYIPMAN")
                let text = String(decoding: response.body.prefix(64), as: UTF8.self).trimmingSpaces()
                if TLSSettings.isIPLiteral(text) { return text }
            } catch {
                if error.code == .cancelled { throw error }
            }
            if attempt < configuration.timing.addressAttempts {
                do {
                    try await Task.sleep(for: configuration.timing.addressRetryDelay)
                } catch {
                    throw ReplayClientError(.cancelled, "the test was cancelled")
                }
            }
        }
        return nil
    }

    func discoversAddress(_ address: String) -> Bool {
        switch configuration.addressDiscovery {
        case .never: false
        case .always: true
        case .automatic: !TLSSettings.isLoopback(address)
        }
    }

    /// Resolves the server name once (Java does the same and reuses the address for the whole test).
    func resolveServer() throws(ReplayClientError) -> String {
        let host = configuration.server
        if TLSSettings.isIPLiteral(host) { return host }
        do {
            let address = try SocketAddress.makeAddressResolvingHost(host, port: 0)
            guard let ip = address.ipAddress else {
                throw ReplayClientError(.unreachable, "cannot resolve the server name '\(host)'")
            }
            return ip
        } catch let error as ReplayClientError {
            throw error
        } catch {
            throw ReplayClientError(.unreachable, "cannot resolve the server name '\(host)': \(error)")
        }
    }

    func makeTLS() throws(ReplayClientError) -> NIOSSLContext? {
        guard configuration.sideChannelTLS || configuration.analyzerTLS else { return nil }
        return try TLSSettings.makeContext(trustedPEM: configuration.trustedCertificatesPEM)
    }

    /// Writes a finished test to the store in one transaction.
    func store(_ result: TestResult) async throws(ReplayClientError) {
        guard let store = configuration.store else { return }
        let key = TestKey(userID: result.userID, historyCount: result.historyCount)
        var replays: [ReplayRecord] = []
        for (role, outcome) in [(ReplayRole.original, result.original), (.control, result.control)] {
            guard let outcome else { continue }
            replays.append(
                ReplayRecord(
                    key: key.replay(role.rawValue),
                    replayName: role == .original ? result.replayName : result.controlReplayName,
                    samples: outcome.samples.droppingLastSample(), receivedAt: result.startedAt,
                    clientDurationSeconds: outcome.duration.inSeconds, reachedTimeLimit: outcome.reachedDeadline))
        }
        let record = TestRecord(
            key: key,
            metadata: TestMetadata(
                // The person's history records the program that measured (ours), not the protocol version declared.
                replayName: result.replayName, startedAt: result.startedAt, provider: result.network.displayName,
                networkType: result.network.linkKind == .unknown ? nil : result.network.linkKind.rawValue,
                clientVersion: WeheVersion.number, serverName: configuration.server,
                extraString: configuration.extraString,
                asNumber: result.network.asNumber.map { Int($0) }, asName: result.network.asName,
                scheduled: configuration.scheduled ? true : nil),
            replays: replays,
            analyses: [AnalysisRecord(test: key, summary: result.summary, analysedAt: Date())],
            sensitive: result.sensitive)
        do {
            try await store.save(test: record)
        } catch {
            throw ReplayClientError(.storeFailed, "cannot record the result in \(store.databaseName): \(error)")
        }
    }
}
