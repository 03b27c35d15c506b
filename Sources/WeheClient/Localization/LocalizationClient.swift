import Foundation
import NIOSSL
import WeheAnalysis
import WeheCore
import WeheReplay
import WeheStore
import WeheWire

/// Locates differentiation that a single-server test found (WeHeY, protocol.md section 12 items 2-8): asks the
/// single-test server for a pair of servers whose paths to the client meet once, replays the original trace to both
/// at the same time (then the control), has each server analyse its own test, asks server 1 to localize, polls for
/// the result and decides with `LocalizationRules`.
///
/// Replays, analyses and the history counter are those of `ReplayClient` (same configuration: ports, TLS trust,
/// user, verdict rules). Every failure after the single-server test — no pair, a replay of the pair failed, a server
/// unreachable, no result in time, a mismatching or empty result — ends as an inconclusive `LocalizationResult`
/// with the reason, never as an accusation; only cancellation and invalid thresholds throw.
public struct LocalizationClient: Sendable {
    /// The replay client's configuration; `server` is the server that ran the single test (asked for the pair).
    public let configuration: ReplayClientConfiguration
    /// Thresholds and polling.
    public let options: LocalizationOptions

    /// The single-server test whose differentiation is being located.
    public struct SingleTest: Sendable, Hashable {
        /// Address of its server.
        public var server: String
        /// Its history count (`H`).
        public var historyCount: Int

        /// Creates a description of the single test.
        public init(server: String, historyCount: Int) {
            self.server = server
            self.historyCount = historyCount
        }
    }

    /// Creates a localization client.
    public init(configuration: ReplayClientConfiguration, options: LocalizationOptions = LocalizationOptions()) {
        self.configuration = configuration
        self.options = options
    }

    /// The address a single test with this configuration ran against (the server name resolved once).
    /// - Throws: `ReplayClientError` `.unreachable` when the name does not resolve.
    public func singleTestServer() throws(ReplayClientError) -> String {
        try ReplayClient(configuration: configuration).resolveServer()
    }

    /// Runs the localization of `test` after the single-server test `single`.
    /// - Parameters:
    ///   - test: the catalog test (its original and control traces are replayed on both servers).
    ///   - single: the earlier single-server test.
    ///   - onEvent: progress, called from any thread; keep it short.
    /// - Returns: the result (stored in the configured store when it got history counts).
    /// - Throws: `ReplayClientError` `.cancelled`, `.invalidInput` (thresholds), `.storeFailed`.
    public func localize(
        _ test: ReplayClient.Test,
        after single: SingleTest,
        onEvent: @escaping @Sendable (LocalizationEvent) -> Void = { _ in }
    ) async throws(ReplayClientError) -> LocalizationResult {
        let rules: LocalizationRules
        do {
            rules = try options.rules.validated()
        } catch {
            throw ReplayClientError(.invalidInput, "localization thresholds: \(error.description)")
        }
        let clock = ContinuousClock()
        let started = clock.now
        var result = LocalizationResult(
            test: test.entry.id, replayName: test.original.name, userID: configuration.userID,
            singleServer: single.server, singleHistoryCount: single.historyCount, verdict: .inconclusive,
            startedAt: Date())
        do {
            try await run(test, single: single, rules: rules, into: &result, onEvent: onEvent)
        } catch {
            result.verdict = error.verdict
            result.reason = error.reason
        }
        if Task.isCancelled { throw ReplayClientError(.cancelled, "the localization was cancelled") }
        result.durationSeconds = started.duration(to: clock.now).inSeconds
        try await store(result)
        onEvent(.finished(result))
        return result
    }

    /// Ends the flow early with a verdict (inconclusive, or "no evidence" when the pair did not both differentiate).
    struct Stop: Error, Sendable {
        var verdict: LocalizationVerdict
        var reason: LocalizationReason

        static func inconclusive(_ code: LocalizationReason.Code, _ message: String) -> Stop {
            Stop(verdict: .inconclusive, reason: LocalizationReason(code, message))
        }

        /// A fleet step failed: inconclusive, carrying the fleet error's code.
        static func fleet(_ code: LocalizationReason.Code, _ error: FleetError, _ message: String) -> Stop {
            Stop(verdict: .inconclusive, reason: LocalizationReason(code, message, fleetError: error.code))
        }
    }

    private func run(
        _ test: ReplayClient.Test,
        single: SingleTest,
        rules: LocalizationRules,
        into result: inout LocalizationResult,
        onEvent: @escaping @Sendable (LocalizationEvent) -> Void
    ) async throws(Stop) {
        let client = ReplayClient(configuration: configuration)
        let tls: NIOSSLContext?
        do {
            tls = try client.makeTLS()
        } catch {
            throw Stop.inconclusive(.serverUnreachable, error.message)
        }
        let http = HTTPClient(
            tls: configuration.analyzerTLS ? tls : nil, connectTimeout: configuration.timing.connect,
            requestTimeout: configuration.timing.httpRequest)
        // Step 2: the pair; on a fleet, its two sites located and both machines' envelopes opened.
        let pair = try await serverPair(http: http, host: single.server)
        result.sharedNetworks = pair.networks
        var accesses: [FleetAccess] = []
        if let fleet = options.fleet {
            accesses = try await enter(sites: pair.servers, fleet: fleet)
            result.fleetServers = accesses.map(\.target)
            do {
                result.servers = try accesses.map { access throws(ReplayClientError) in
                    var configuration = configuration
                    configuration.server = access.server
                    return try ReplayClient(configuration: configuration).resolveServer()
                }
            } catch {
                for access in accesses { await access.close() }
                throw Stop.inconclusive(.serverUnreachable, error.message)
            }
            onEvent(.pairEntered(result.fleetServers))
        } else {
            result.servers = pair.servers
        }
        // Step 3: history counts H+1 and H+2 (two new values of the counter), then the simultaneous replays.
        var taken: [Int] = []
        for _ in 0..<2 {
            do {
                taken.append(try await configuration.historyCounter.next())
            } catch {
                throw Stop.inconclusive(.replayFailed, "cannot get the next test number: \(error)")
            }
        }
        let counts = taken
        result.historyCounts = counts
        onEvent(.pairSelected(servers: result.servers, sharedNetworks: pair.networks, historyCounts: counts))
        guard accesses.count == 2 else {
            try await measure(test, single: single, rules: rules, counts: counts, into: &result, onEvent: onEvent)
            return
        }
        // The rest runs only while both envelopes are open; they are closed when it ends, however it ends.
        let (first, second) = (accesses[0].envelope, accesses[1].envelope)
        let base = result
        let outcome: Result<LocalizationResult, Stop>
        do {
            outcome = try await first.guarding {
                try await second.guarding { () async -> Result<LocalizationResult, Stop> in
                    var measured = base
                    do throws(Stop) {
                        try await self.measure(
                            test, single: single, rules: rules, counts: counts, into: &measured, onEvent: onEvent)
                        return .success(measured)
                    } catch {
                        measured.verdict = error.verdict
                        measured.reason = error.reason
                        return .success(measured)
                    }
                }
            }
        } catch let error as FleetError {
            outcome = .failure(.fleet(.envelopeFailed, error, error.message))
        } catch {
            outcome = .failure(.inconclusive(.replayFailed, "cancelled"))
        }
        for access in accesses { await access.close() }
        switch outcome {
        case .success(let measured): result = measured
        case .failure(let stop): throw stop
        }
    }

    /// Steps 3-8 on the chosen pair with its history counts: the simultaneous replays, each server's verdict, the
    /// localization request and its result.
    private func measure(
        _ test: ReplayClient.Test,
        single: SingleTest,
        rules: LocalizationRules,
        counts: [Int],
        into result: inout LocalizationResult,
        onEvent: @escaping @Sendable (LocalizationEvent) -> Void
    ) async throws(Stop) {
        let client = ReplayClient(configuration: configuration)
        let tls: NIOSSLContext?
        do {
            tls = try client.makeTLS()
        } catch {
            throw Stop.inconclusive(.serverUnreachable, error.message)
        }
        let http = HTTPClient(
            tls: configuration.analyzerTLS ? tls : nil, connectTimeout: configuration.timing.connect,
            requestTimeout: configuration.timing.httpRequest)
        for role in [ReplayRole.original, .control] {
            let trace = role == .original ? test.original : test.control
            onEvent(.replaysStarted(role: role, replayName: trace.name))
            let servers = result.servers
            let logger = configuration.logger
            let outcomes = await simultaneously { (index: Int) async throws(ReplayClientError) -> ReplayOutcome in
                let session = try await client.replaySession(
                    trace, role: role, historyCount: counts[index], endOfTest: role == .control,
                    appDuration: test.entry.durationSeconds, address: servers[index], tls: tls,
                    onProgress: { onEvent(.replayProgress(server: index, role: role, progress: $0)) })
                // UDP: the server's loss timeline needs the client's word on which datagrams arrived. A server that
                // cannot take it leaves the loss test out; the throughput test still decides.
                if role == .original, let received = session.receivedDatagrams {
                    let refusal: String?
                    do throws(ReplayClientError) {
                        refusal = try await client.reportDatagrams(
                            received, address: servers[index], tls: tls, historyCount: counts[index],
                            testID: role.rawValue)
                    } catch {
                        if error.code == .cancelled { throw error }
                        refusal = error.message
                    }
                    if let refusal {
                        logger.notice(
                            "UDP loss report not taken",
                            metadata: ["wehe.server": "\(servers[index])", "wehe.reason": "\(refusal)"])
                    }
                }
                return session.outcome
            }
            for (index, outcome) in outcomes.enumerated() {
                switch outcome {
                case .success(let replay): onEvent(.replayFinished(server: index, role: role, outcome: replay))
                case .failure(let error):
                    throw stop(error, server: result.servers[index], doing: "the \(role) replay")
                }
            }
        }
        // Step 4: each server's own verdict on its test.
        let servers = result.servers
        let analyses = await simultaneously { (index: Int) async throws(ReplayClientError) -> AnalysisSummary in
            try await client.analysis(address: servers[index], tls: tls, historyCount: counts[index])
        }
        var summaries: [AnalysisSummary] = []
        for (index, analysis) in analyses.enumerated() {
            switch analysis {
            case .success(let summary): summaries.append(summary)
            case .failure(let error): throw stop(error, server: result.servers[index], doing: "the analysis")
            }
        }
        result.serverSummaries = summaries
        onEvent(.serverVerdicts(summaries.map(\.verdict)))
        guard summaries.allSatisfy({ $0.verdict == .differentiation }) else {
            let verdicts = summaries.map(\.verdict.rawValue).joined(separator: " / ")
            throw Stop(
                verdict: .noEvidence,
                reason: LocalizationReason(
                    .notDifferentiatedOnBoth, "differentiation did not occur with both servers (\(verdicts))"))
        }
        // Steps 5-7: localize on server 1, then poll for the result.
        try await requestLocalization(http: http, test: test, single: single, servers: result.servers, counts: counts)
        onEvent(.localizationRequested(server: result.servers[0]))
        let answer = try await pollResult(http: http, host: result.servers[0], counts: counts, onEvent: onEvent)
        // Step 8: the decision.
        let decision = rules.decide(
            mwuPValue: answer.throughputSum?.mwuPValue, correlationPValues: answer.lossCorrelation?.pValues)
        result.throughputSimilar = decision.throughputSimilar
        result.lossCorrelated = decision.lossCorrelated
        result.verdict = decision.verdict
        var note = answer.note
        if decision.verdict == .inconclusive {
            let why =
                "the server's result holds neither the throughput-sum nor the loss-correlation test"
                + (answer.note.map { " (\($0))" } ?? "")
            result.reason = LocalizationReason(.noTestResults, why)
            note = why
        }
        result.summary = LocalizationSummary(
            mwuStatistic: answer.throughputSum?.mwuStatistic, mwuPValue: answer.throughputSum?.mwuPValue,
            simultaneousMeansMbps: answer.throughputSum?.simultaneousMeansMbps ?? [],
            sumMeanMbps: answer.throughputSum?.sumMeanMbps, singleMeanMbps: answer.throughputSum?.singleMeanMbps,
            intervalSizes: answer.lossCorrelation?.intervalSizes ?? [],
            correlationPValues: answer.lossCorrelation?.pValues ?? [],
            averageLoss: answer.lossCorrelation?.averageLoss ?? [], verdict: decision.verdict, note: note,
            mergePointQueue: answer.mergePointQueue)
    }

    /// Runs `body` for server 0 and server 1 at the same time and returns both outcomes in server order.
    private func simultaneously<T: Sendable>(
        _ body: @escaping @Sendable (Int) async throws(ReplayClientError) -> T
    ) async -> [Result<T, ReplayClientError>] {
        @Sendable func attempt(_ index: Int) async -> Result<T, ReplayClientError> {
            do {
                return .success(try await body(index))
            } catch {
                return .failure(error)
            }
        }
        async let first = attempt(0)
        async let second = attempt(1)
        return await [first, second]
    }

    /// Maps a replay or analysis error of one server to the reason of an inconclusive result.
    private func stop(_ error: ReplayClientError, server: String, doing what: String) -> Stop {
        switch error.code {
        case .unreachable, .tlsFailed:
            return .inconclusive(.serverUnreachable, "server \(server) (\(what)): \(error.message)")
        case .analyzerFailed, .resultMismatch:
            return .inconclusive(.analysisFailed, "server \(server): \(error.message)")
        default:
            return .inconclusive(.replayFailed, "server \(server) (\(what)): \(error.message)")
        }
    }
}
