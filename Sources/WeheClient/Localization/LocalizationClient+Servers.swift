import Foundation
import WeheCore
import WeheStore
import WeheWire

/// The conversation with the servers around the replays: the pair, entering a fleet's sites, asking server 1 to
/// localize and polling for its answer, and writing the run to the history.
extension LocalizationClient {
    /// `GET command=getServers` on the single-test server: the first address pair, or on a fleet the first site
    /// pair (protocol.md 12 step 2).
    func serverPair(http: HTTPClient, host: String) async throws(Stop)
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
    func enter(sites: [String], fleet: FleetConfiguration) async throws(Stop) -> [FleetAccess] {
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
    func requestLocalization(
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
    func pollResult(
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
    func get(http: HTTPClient, host: String, query: [(String, String)], what: String) async throws(Stop)
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
    func store(_ result: LocalizationResult) async throws(ReplayClientError) {
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
