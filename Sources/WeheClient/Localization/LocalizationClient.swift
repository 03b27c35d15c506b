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
    private struct Stop: Error, Sendable {
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

    /// `GET command=getServers` on the single-test server: the first address pair, or on a fleet the first site
    /// pair (protocol.md 12 step 2).
    private func serverPair(http: HTTPClient, host: String) async throws(Stop)
        -> (servers: [String], networks: String)
    {
        let body = try await get(http: http, host: host, query: [("command", "getServers")], what: "getServers")
        guard let root = try? JSONValue.parse(body), case .bool(let success)? = root["success"] else {
            throw Stop.inconclusive(.noServerPair, "the server's answer to getServers is not readable")
        }
        guard success else {
            let message: String
            if case .string(let text)? = root["error"] { message = text } else { message = "no reason given" }
            throw Stop.inconclusive(.noServerPair, "the server has no server pair for this network: \(message)")
        }
        let key = options.fleet == nil ? "server-ip-pairs" : "server-site-pairs"
        guard case .array(let pairs)? = root["response"]?[key], case .array(let first)? = pairs.first,
            first.count >= 2, case .string(let one) = first[0], case .string(let two) = first[1],
            !one.isEmpty, !two.isEmpty, one != two
        else {
            let what = options.fleet == nil ? "server addresses" : "fleet sites (server-site-pairs)"
            throw Stop.inconclusive(.noServerPair, "the server answered no usable pair of \(what)")
        }
        var networks = ""
        if first.count >= 3, case .string(let text) = first[2] { networks = text }
        return ([one, two], networks)
    }

    /// Locates each site of the pair (`?site=<site>`, one query per site as WeHeY does) and opens the access
    /// envelope of one machine of each, trying a site's machines in the locate service's order.
    private func enter(sites: [String], fleet: FleetConfiguration) async throws(Stop) -> [FleetAccess] {
        var opened: [FleetAccess] = []
        func giveUp(_ stop: Stop) async -> Stop {
            for access in opened { await access.close() }
            return stop
        }
        for site in sites {
            var configuration = fleet
            configuration.sites = [site]
            let answer: LocateAnswer
            do {
                answer = try await FleetLocator(configuration: configuration).locate()
            } catch {
                if Task.isCancelled { throw await giveUp(.inconclusive(.siteNotLocated, "cancelled")) }
                throw await giveUp(.fleet(.siteNotLocated, error, "site \(site) of the pair: \(error.message)"))
            }
            do {
                opened.append(try await FleetAccess.open(answer, configuration: configuration))
            } catch {
                if Task.isCancelled { throw await giveUp(.inconclusive(.envelopeFailed, "cancelled")) }
                throw await giveUp(.fleet(.envelopeFailed, error, "site \(site) of the pair: \(error.message)"))
            }
        }
        guard opened.count == 2, opened[0].target.machine != opened[1].target.machine else {
            throw await giveUp(
                .inconclusive(
                    .noServerPair, "both sites of the pair (\(sites.joined(separator: ", "))) located the same machine")
            )
        }
        return opened
    }

    /// `POST command=localize` on server 1.
    private func requestLocalization(
        http: HTTPClient,
        test: ReplayClient.Test,
        single: SingleTest,
        servers: [String],
        counts: [Int]
    ) async throws(Stop) {
        let trace = test.original
        let port: String
        if let flow = trace.flows.first {
            port = trace.transport == .udp ? String(flow.clientPort) : String(flow.serverPort)
        } else {
            port = ""
        }
        func info(_ index: Int) -> String {
            JSONValue.object([
                ("server", .string(servers[index])), ("historyCount", .string(String(counts[index]))),
                ("replayPort", .string(port)), ("replayName", .string(trace.name)),
            ]).serialized()
        }
        let singleInfo = JSONValue.object([
            ("singleReplay_userID", .string(configuration.userID)), ("singleReplay_server", .string(single.server)),
            ("singleReplay_historyCount", .string(String(single.historyCount))),
        ]).serialized()
        let form = FormParameters.encode([
            ("command", "localize"), ("userID", configuration.userID), ("testID", "0"), ("server1Info", info(0)),
            ("server2Info", info(1)), ("singleServerInfo", singleInfo), ("kwargs", "{}"), ("host", servers[0]),
        ])
        let response: HTTPClient.Response
        do {
            response = try await http.request(
                method: .POST, host: servers[0], port: configuration.analyzerPort, path: "/Results",
                body: Array(form.utf8), contentType: "application/x-www-form-urlencoded", what: "localize")
        } catch {
            if error.code == .cancelled { throw Stop.inconclusive(.localizeRefused, "cancelled") }
            throw Stop.inconclusive(.serverUnreachable, "server \(servers[0]) (localize): \(error.message)")
        }
        guard let root = try? JSONValue.parse(response.body), case .bool(let success)? = root["success"] else {
            throw Stop.inconclusive(
                .localizeRefused, "server \(servers[0]) answered localize unreadably (HTTP \(response.status))")
        }
        guard success else {
            let message: String
            if case .string(let text)? = root["error"] { message = text } else { message = root.serialized() }
            throw Stop.inconclusive(.localizeRefused, "server \(servers[0]) refused to localize: \(message)")
        }
    }

    /// Polls `localizeResult` with back-off, at most `options.pollAttempts` times.
    private func pollResult(
        http: HTTPClient,
        host: String,
        counts: [Int],
        onEvent: @escaping @Sendable (LocalizationEvent) -> Void
    ) async throws(Stop) -> LocalizationAnswer {
        let query = [
            ("command", "localizeResult"), ("userID", configuration.userID),
            ("historyCounts", "[\(counts[0]), \(counts[1])]"), ("testID", "0"), ("host", host),
        ]
        var delay = options.firstPollDelay
        var last = "no answer"
        let attempts = max(1, options.pollAttempts)
        for attempt in 1...attempts {
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw Stop.inconclusive(.resultNotReady, "cancelled")
            }
            delay = min(delay * options.pollBackoff, options.maximumPollDelay)
            let body: [UInt8]
            do {
                body = try await get(http: http, host: host, query: query, what: "localizeResult")
            } catch {
                last = error.reason.message
                onEvent(.waitingForResult(attempt: attempt))
                continue
            }
            let reply: LocalizationAnswer.Reply
            do {
                reply = try LocalizationAnswer.parse(body)
            } catch {
                last = error.message
                onEvent(.waitingForResult(attempt: attempt))
                continue
            }
            switch reply {
            case .notReady:
                last = "No result found"
                onEvent(.waitingForResult(attempt: attempt))
            case .failed(let message):
                throw Stop.inconclusive(.localizeRefused, "server \(host) could not localize: \(message)")
            case .ready(let answer):
                let theirs = answer.userID.trimmingSpaces().lowercased()
                guard theirs == configuration.userID.trimmingSpaces().lowercased(), answer.historyCounts == counts
                else {
                    throw Stop.inconclusive(
                        .resultMismatch,
                        "server \(host) answered for user \(answer.userID) and tests \(answer.historyCounts), "
                            + "not \(configuration.userID) and \(counts)")
                }
                return answer
            }
        }
        throw Stop.inconclusive(
            .resultNotReady, "server \(host) had no localization result after \(attempts) queries (last: \(last))")
    }

    /// One analyzer GET; network failures become `.serverUnreachable`.
    private func get(http: HTTPClient, host: String, query: [(String, String)], what: String) async throws(Stop)
        -> [UInt8]
    {
        do {
            return try await http.request(
                method: .GET, host: host, port: configuration.analyzerPort,
                path: "/Results?" + FormParameters.encode(query), what: what
            ).body
        } catch {
            throw Stop.inconclusive(.serverUnreachable, "server \(host) (\(what)): \(error.message)")
        }
    }

    /// Writes the run to the history (when it got history counts; a run without a pair has no key).
    private func store(_ result: LocalizationResult) async throws(ReplayClientError) {
        guard let store = configuration.store, result.historyCounts.count == 2, result.servers.count == 2 else {
            return
        }
        let summary =
            result.summary
            ?? LocalizationSummary(
                mwuStatistic: nil, mwuPValue: nil, simultaneousMeansMbps: [], sumMeanMbps: nil, singleMeanMbps: nil,
                intervalSizes: [], correlationPValues: [], averageLoss: [], verdict: result.verdict,
                note: result.reason?.description)
        let run = LocalizationRun(
            userID: result.userID, historyCounts: result.historyCounts, servers: result.servers,
            replayName: result.replayName, singleServer: result.singleServer,
            singleHistoryCount: result.singleHistoryCount, requestedAt: result.startedAt, summary: summary)
        do {
            try await store.save(localization: run)
        } catch {
            throw ReplayClientError(.storeFailed, "cannot store the localization: \(error.description)")
        }
    }
}
