import Synchronization
import Testing
import WeheAnalysis
import WeheClient
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

/// Two scripted servers on 127.0.0.1 and 127.0.0.2 (same side-channel and analyzer ports) forming a WeHeY pair.
enum PairHarness {
    static let first = "127.0.0.1"
    static let second = "127.0.0.2"

    /// A server behaviour whose own analysis always reports differentiation (area 0.9, p 0.001).
    static func differentiating() -> FakeWeheServer.Behaviour {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0.9
        behaviour.ksPValue = 0.001
        behaviour.notReadyAnswers = 0
        behaviour.serverPair = [first, second, "AS64500 or AS64501"]
        return behaviour
    }

    /// Starts both servers, runs `body`, stops them.
    static func run<T>(
        _ id: String = "tinyweb",
        first firstBehaviour: FakeWeheServer.Behaviour = differentiating(),
        second secondBehaviour: FakeWeheServer.Behaviour? = differentiating(),
        _ body: (FakeWeheServer, FakeWeheServer?, ReplayClient.Test) async throws -> T
    ) async throws -> T {
        let test = try Harness.test(id)
        let traces = [test.original, test.control]
        // Server 2 takes server 1's port numbers on 127.0.0.2, where they may be taken: then both start over.
        let (one, two) = try await PortCollisions.retrying { () async throws -> (FakeWeheServer, FakeWeheServer?) in
            let one = try await FakeWeheServer.start(traces: traces, behaviour: firstBehaviour, host: first)
            guard let secondBehaviour else { return (one, nil) }
            do {
                let two = try await FakeWeheServer.start(
                    traces: traces, behaviour: secondBehaviour, host: second, sideChannelPort: one.sideChannelPort,
                    analyzerPort: one.analyzerPort)
                return (one, two)
            } catch {
                await one.stop()
                throw error
            }
        }
        do {
            let value = try await body(one, two, test)
            await one.stop()
            await two?.stop()
            return value
        } catch {
            await one.stop()
            await two?.stop()
            throw error
        }
    }

    /// A localization client for the pair with fast polling; the single test had history count 7.
    static func client(
        _ server: FakeWeheServer,
        store: (any ResultStore)? = nil,
        rules: LocalizationRules = LocalizationRules(),
        pollAttempts: Int = 5
    ) -> LocalizationClient {
        var configuration = Harness.configuration(server, counter: InMemoryHistoryCounter(last: 7))
        configuration.store = store
        let options = LocalizationOptions(
            rules: rules, firstPollDelay: .milliseconds(10), pollBackoff: 2, maximumPollDelay: .milliseconds(40),
            pollAttempts: pollAttempts)
        return LocalizationClient(configuration: configuration, options: options)
    }

    static let single = LocalizationClient.SingleTest(server: first, historyCount: 7)
}

@Suite("LocalizationClient against two scripted loopback servers", .serialized)
struct LocalizationClientTests {
    @Test("full flow: pair, originals then controls on both servers with H+1/H+2, localize on server 1, verdict")
    func fullFlow() async throws {
        let store = InMemoryResultStore()
        let events = Mutex<[String]>([])
        let (result, one, two) = try await PairHarness.run { one, two, test in
            let result = try await PairHarness.client(one, store: store).localize(test, after: PairHarness.single) {
                event in
                let name: String
                switch event {
                case .pairEntered: name = "entered"
                case .pairSelected: name = "pair"
                case .replaysStarted(let role, _): name = "start.\(role)"
                case .replayFinished(let server, let role, _): name = "done.\(role).\(server)"
                case .serverVerdicts: name = "verdicts"
                case .localizationRequested: name = "localize"
                case .waitingForResult: name = "wait"
                case .finished: name = "finished"
                case .replayProgress: return
                }
                events.withLock { $0.append(name) }
            }
            return (result, one.snapshot, try #require(two).snapshot)
        }
        #expect(result.verdict == .accessNetwork)
        #expect(result.reason == nil)
        #expect(result.throughputSimilar == true && result.lossCorrelated == nil)
        #expect(result.servers == [PairHarness.first, PairHarness.second])
        #expect(result.sharedNetworks == "AS64500 or AS64501")
        #expect(result.historyCounts == [8, 9])
        #expect(result.serverSummaries.map(\.verdict) == [.differentiation, .differentiation])
        #expect(result.summary?.mwuPValue == 0.01)
        // Server 1 got H+1, server 2 got H+2; each an original (testID 0) then a control (testID 1, last).
        for (state, count) in [(one, 8), (two, 9)] {
            #expect(state.declarations.map(\.historyCount) == [count, count])
            #expect(state.declarations.map(\.testID) == [0, 1])
            #expect(state.declarations.map(\.endOfTest) == [false, true])
            #expect(state.uploads.count == 2)
        }
        #expect(two.localizeRequests.isEmpty && two.getServersQueries == 0)
        #expect(one.getServersQueries == 1)
        let request = try #require(one.localizeRequests.first)
        #expect(request["userID"] == "@abc123xyz" && request["testID"] == "0")
        let info1 = try JSONValue.parse(Array((request["server1Info"] ?? "").utf8))
        let info2 = try JSONValue.parse(Array((request["server2Info"] ?? "").utf8))
        let single = try JSONValue.parse(Array((request["singleServerInfo"] ?? "").utf8))
        #expect(info1["server"] == .string("127.0.0.1") && info1["historyCount"] == .string("8"))
        #expect(info2["server"] == .string("127.0.0.2") && info2["historyCount"] == .string("9"))
        #expect(info1["replayName"] == .string("TinyWeb-11212026"))
        #expect(single["singleReplay_historyCount"] == .string("7"))
        #expect(single["singleReplay_server"] == .string("127.0.0.1"))
        // One "No result found", then the result.
        #expect(one.localizeResultQueries.count == 2)
        #expect(one.localizeResultQueries.first?["historyCounts"] == "[8, 9]")
        let log = events.withLock { $0 }
        #expect(log.first == "pair" && log.last == "finished")
        let originalsDone = try #require(log.lastIndex(of: "done.original.1") ?? nil)
        let controlsStart = try #require(log.firstIndex(of: "start.control"))
        #expect(originalsDone < controlsStart)
        #expect(log.contains("done.original.0") && log.contains("done.control.0") && log.contains("done.control.1"))
        let stored = try #require(try await store.localization(userID: "@abc123xyz", historyCounts: [8, 9]))
        #expect(stored.summary?.verdict == .accessNetwork)
        #expect(stored.servers == ["127.0.0.1", "127.0.0.2"] && stored.singleHistoryCount == 7)
    }

    @Test(
        "client decision (protocol.md 12 item 8): either test, both, neither",
        arguments: [
            (0.01, nil, LocalizationVerdict.accessNetwork),
            (0.2, nil, .noEvidence),
            (nil, [0.01, 0.01, 0.5], .accessNetwork),
            (nil, [0.01, 0.5, 0.5], .noEvidence),
            (0.2, [0.01, 0.02], .accessNetwork),
            (0.2, [0.3, 0.4], .noEvidence),
            (nil, nil, .inconclusive),
            (nil, [], .inconclusive),
        ] as [(Double?, [Double]?, LocalizationVerdict)])
    func decision(mwu: Double?, correlation: [Double]?, expected: LocalizationVerdict) async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .ready(mwuPValue: mwu, correlationPValues: correlation)
        behaviour.localizationNotReady = 0
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == expected)
        if expected == .inconclusive {
            #expect(result.reason?.code == .noTestResults)
        } else {
            #expect(result.reason == nil)
        }
    }

    @Test("thresholds are configuration: a 0.95 correlation ratio turns 2 of 3 correlated sizes into no evidence")
    func thresholds() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .ready(mwuPValue: nil, correlationPValues: [0.01, 0.01, 0.5])
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one, rules: LocalizationRules(correlationRatioThreshold: 0.95))
                .localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == .noEvidence && result.lossCorrelated == false)
        await #expect(throws: ReplayClientError(.invalidInput, "")) {
            try await PairHarness.run { one, _, test in
                try await PairHarness.client(one, rules: LocalizationRules(mwuPValueThreshold: 2))
                    .localize(test, after: PairHarness.single)
            }
        }
    }

    @Test("the second server is down: inconclusive (server unreachable), stored with its reason")
    func secondServerDown() async throws {
        let store = InMemoryResultStore()
        let result = try await PairHarness.run(second: nil) { one, _, test in
            try await PairHarness.client(one, store: store).localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == .inconclusive)
        #expect(result.reason?.code == .serverUnreachable)
        #expect(result.reason?.message.contains("127.0.0.2") == true)
        #expect(result.summary == nil)
        let stored = try #require(try await store.localization(userID: "@abc123xyz", historyCounts: [8, 9]))
        #expect(stored.summary?.verdict == .inconclusive)
        #expect(stored.summary?.note?.contains("server-unreachable") == true)
    }

    @Test("localizeResult never ready: inconclusive after the bounded number of queries")
    func neverReady() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .never
        let (result, queries) = try await PairHarness.run(first: behaviour) { one, _, test in
            let result = try await PairHarness.client(one, pollAttempts: 3).localize(test, after: PairHarness.single)
            return (result, one.snapshot.localizeResultQueries.count)
        }
        #expect(result.verdict == .inconclusive && result.reason?.code == .resultNotReady)
        #expect(queries == 3)
    }

    @Test("no pair for this network: inconclusive, nothing replayed, nothing stored")
    func noPair() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.serverPair = nil
        let store = InMemoryResultStore()
        let (result, declarations) = try await PairHarness.run(first: behaviour) { one, _, test in
            let result = try await PairHarness.client(one, store: store).localize(test, after: PairHarness.single)
            return (result, one.snapshot.declarations.count)
        }
        #expect(result.verdict == .inconclusive && result.reason?.code == .noServerPair)
        #expect(result.reason?.message.contains("No Y-topology found.") == true)
        #expect(declarations == 0 && result.historyCounts.isEmpty)
        #expect(try await store.localizations(userID: "@abc123xyz").isEmpty)
    }

    @Test("only one server sees differentiation: no evidence, localize is never asked")
    func notBoth() async throws {
        var second = PairHarness.differentiating()
        second.areaTest = 0.01
        second.ksPValue = 0.9
        let (result, requests) = try await PairHarness.run(second: second) { one, _, test in
            let result = try await PairHarness.client(one).localize(test, after: PairHarness.single)
            return (result, one.snapshot.localizeRequests.count)
        }
        #expect(result.verdict == .noEvidence && result.reason?.code == .notDifferentiatedOnBoth)
        #expect(result.serverSummaries.map(\.verdict) == [.differentiation, .noDifferentiation])
        #expect(requests == 0)
    }

    @Test("a result for other history counts or another user is not trusted: inconclusive")
    func mismatch() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .raw(
            #"{"success":true,"response":{"userID":"@abc123xyz","historyCounts":[1,2],"testID":"0","#
                + #""localization_tests":["pairsum_vs_single_xput"],"pairsum_vs_single_xput":{"mwuPVal":0.001}}}"#)
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == .inconclusive && result.reason?.code == .resultMismatch)
    }

    @Test("numbers written as strings (Python str()) are read; p-values outside [0, 1] are not trusted")
    func lenientNumbers() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .raw(
            #"{"success":true,"response":{"userID":"@ABC123XYZ ","historyCounts":["8","9"],"testID":"0","#
                + #""pairsum_vs_single_xput":{"mwuVal":"3900.0","mwuPVal":"0.2"},"#
                + #""loss_correlation":{"intervalSizes":["0.1","0.2","0.3"],"corrPValues":["0.001",7,"0.01"]}}}"#)
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == .accessNetwork)
        #expect(result.throughputSimilar == false && result.lossCorrelated == true)
        #expect(result.summary?.correlationPValues == [0.001, 0.01])
        #expect(result.summary?.mwuStatistic == 3900)
    }

    @Test("merge_point_queue (our extension) is read beside the published tests, which decide the verdict alone")
    func mergePointQueue() async throws {
        let branch =
            #"{"mergePoint":{"pValue":0.42,"extraDelay":0.0001,"significant":false},"#
            + #""path":{"pValue":0.00003,"extraDelay":0.031,"significant":true},"flowProbes":14,"flowUnanswered":1}"#
        var behaviour = PairHarness.differentiating()
        behaviour.localization = .raw(
            #"{"success":true,"response":{"userID":"@ABC123XYZ ","historyCounts":[8,9],"testID":"0","#
                + #""pairsum_vs_single_xput":{"mwuVal":3900.0,"mwuPVal":0.2},"#
                + #""loss_correlation":{"intervalSizes":[0.1],"corrPValues":[0.5]},"#
                + #""merge_point_queue":{"verdict":"access-network","branches":[\#(branch),\#(branch)]}}}"#)
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        // The published rules: the throughput sum is not similar and the losses do not correlate.
        #expect(result.verdict == .noEvidence)
        let queue = try #require(result.summary?.mergePointQueue)
        #expect(queue.verdict == .accessNetwork)
        #expect(queue.first?.path?.extraDelay == 0.031 && queue.second?.flowUnanswered == 1)
        #expect(queue.first?.mergePoint.significant == false)

        // A malformed object (an unknown verdict) is dropped, not trusted.
        var bad = PairHarness.differentiating()
        bad.localization = .raw(
            #"{"success":true,"response":{"userID":"@ABC123XYZ ","historyCounts":[8,9],"testID":"0","#
                + #""pairsum_vs_single_xput":{"mwuVal":3900.0,"mwuPVal":0.2},"#
                + #""merge_point_queue":{"verdict":"elsewhere","branches":[null,null]}}}"#)
        let dropped = try await PairHarness.run(first: bad) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        #expect(dropped.summary != nil && dropped.summary?.mergePointQueue == nil)
    }

    @Test("one replay of the pair fails (server 2 cuts the response): inconclusive, no localize request")
    func replayFails() async throws {
        var second = PairHarness.differentiating()
        second.closeAfterBytes = 10
        let (result, requests) = try await PairHarness.run(second: second) { one, _, test in
            let result = try await PairHarness.client(one).localize(test, after: PairHarness.single)
            return (result, one.snapshot.localizeRequests.count)
        }
        #expect(result.verdict == .inconclusive)
        #expect(result.reason?.code == .replayFailed)
        #expect(result.reason?.message.contains("127.0.0.2") == true)
        #expect(requests == 0)
    }

    @Test("server 1 refuses to localize: inconclusive with its message")
    func refused() async throws {
        var behaviour = PairHarness.differentiating()
        behaviour.localizeAnswer = #"{"success": false, "error": "peer measurements unavailable"}"#
        let result = try await PairHarness.run(first: behaviour) { one, _, test in
            try await PairHarness.client(one).localize(test, after: PairHarness.single)
        }
        #expect(result.verdict == .inconclusive && result.reason?.code == .localizeRefused)
        #expect(result.reason?.message.contains("peer measurements unavailable") == true)
    }
}
