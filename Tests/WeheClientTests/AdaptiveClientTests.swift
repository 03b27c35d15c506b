import Foundation
import Synchronization
import Testing
import WeheCore
import WeheReplay
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheClient

@Suite("The adaptive verdict's rounds on the wire (scripted loopback server)", .serialized)
struct AdaptiveClientTests {
    @Test(
        "each round is an ordinary test: two declarations, the last marked end of test, no analysis asked; one record")
    func roundsOnTheWire() async throws {
        let (server, tests) = try await Harness.start(["tinyweb"])
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        var configuration = Harness.configuration(server)
        configuration.store = store
        let plan = AdaptivePlan(test: tests[0])
        let rounds = Mutex<[AdaptiveRoundProgress]>([])
        let result = try await ReplayClient(configuration: configuration).runAdaptive(tests[0], fallBack: false) {
            if case .roundFinished(_, let round) = $0 { rounds.withLock { $0.append(round) } }
        }
        let sensitive = try #require(result.sensitive)
        let seen = rounds.withLock { $0 }
        // The side channel the last replay opened ahead for a next round that never came is closed unused.
        let allClosed = await waitUntil {
            let state = server.snapshot
            return state.sideChannelsAccepted == 2 * seen.count + 1
                && state.sideChannelsClosed == state.sideChannelsAccepted
        }
        #expect(allClosed)
        let state = server.snapshot
        let declared = state.messages.filter { !$0.isEmpty }
        #expect(state.messages.count - declared.count == 1, "side channels without a message")
        // Two side channels per round, history counts 1, 2, … in order, the second of each pair ends the test.
        #expect(declared.count == 2 * seen.count)
        for (index, messages) in declared.enumerated() {
            let fields = messages[0].split(separator: ";").map(String.init)
            #expect(fields[4] == String(index / 2 + 1), "\(messages[0])")
            #expect(fields[5] == (index % 2 == 1 ? "True" : "False"), "\(messages[0])")
        }
        #expect(state.analyzeRequests.isEmpty)
        #expect(sensitive.stopReason != nil)
        #expect(sensitive.rounds == seen.count)
        #expect(seen.map(\.round) == Array(1...seen.count))
        // The bytes said after each round only grow, and the last report is the total.
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.bytesMoved < $1.bytesMoved })
        #expect(seen.last?.bytesMoved == sensitive.bytesMoved)
        // No round starts that would pass the cap (a round costs about the same each time on loopback).
        #expect((sensitive.bytesMoved ?? .max) <= plan.maximumBytes)
        // The fixture's 400 kB trace is shorter than the floor: its short rounds are its first response (64 kB
        // asked, the 120 kB response kept whole), its floor round the whole trace. With the cap at twice the
        // published test, the rule cannot decide (7 rounds at the least and the floor round would pass the cap): the
        // floor round runs while it still fits, then short rounds until the cap, inconclusive.
        #expect(seen.filter(\.isFloorRound).count == 1, "\(seen.map(\.isFloorRound))")
        #expect(seen.first?.isFloorRound == false)
        #expect(sensitive.stopReason == .budget)
        #expect(result.verdict == .inconclusive)
        // One record, under the first round's history count, with the adaptive summary.
        let stored = try #require(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 1)))
        #expect(stored.sensitive?.stopReason == .budget)
        #expect(stored.replays.count == 2)
        #expect(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 2)) == nil)
    }

    @Test(
        "the plan: short rounds a twentieth of the trace (250 kB at least, a twelfth under 3 MB), the floor round, caps"
    )
    func plan() throws {
        let library = ReplayLibrary(directory: TestResources.fixtureReplays)
        let test = try ReplayClient.Test.load("tinyweb", from: library, catalog: try library.catalog())
        let plan = AdaptivePlan(test: test)
        let replay = test.original.bytesBothWays
        #expect(plan.shortRound == .bytes(AdaptivePlan.shortRoundBytes(replayBytes: replay)))
        // A twentieth of a large trace, 250 kB from 3 MB to 5 MB, a twelfth of a smaller one, 64 kB at least.
        #expect(AdaptivePlan.shortRoundBytes(replayBytes: 20_000_000) == 1_000_000)
        #expect(AdaptivePlan.shortRoundBytes(replayBytes: 4_000_000) == 250_000)
        #expect(AdaptivePlan.shortRoundBytes(replayBytes: 1_950_000) == 162_500)
        #expect(AdaptivePlan.shortRoundBytes(replayBytes: 400_000) == 64_000)
        #expect(AdaptivePlan.shortRoundBytes(replayBytes: 50_000) == 50_000)
        #expect(plan.floorRound == .bytes(replay))
        #expect(plan.publishedBytes == 2 * replay)
        #expect(plan.maximumBytes == 2 * plan.publishedBytes)
        #expect(plan.costText.contains("at most"))
    }

    @Test("a long round that would pass one published test's bytes waits for short rounds that mostly agree")
    func longRoundHeldBackOnANoisyPath() {
        // Deezer-like: the published test 12 MB, the long round 12 MB more after 10 short rounds of 0.6 MB.
        let published = 12_000_000
        let after = 6_000_000 + 12_000_000
        func holds(_ differing: Int, of rounds: Int, after bytes: Int = after) -> Bool {
            ReplayClient.holdsBackLongRound(
                differing: differing, rounds: rounds, bytesAfterIt: bytes, publishedBytes: published)
        }
        // On/off cross traffic: 4 of 15 rounds beyond ±10 %: held back; 3 of 15 (a fifth) too.
        #expect(holds(4, of: 15))
        #expect(holds(3, of: 15))
        // A calm path with one or two stalled rounds: 1 of 13, 2 of 13 (under a fifth): the long round runs.
        #expect(!holds(1, of: 13))
        #expect(!holds(2, of: 13))
        // One round of five is a fifth, but a single round says little: it runs.
        #expect(!holds(1, of: 5))
        #expect(holds(2, of: 6))
        // A long round that stays within the published test's bytes (a large trace's 7 MB) is never held back.
        #expect(!holds(10, of: 15, after: published))
        // Nor after too few rounds for a share to mean anything.
        #expect(!holds(3, of: 3))
    }

    @Test("long rounds to confirm one that differed only when the fewest that could fit under the cap")
    func confirmingLongRoundsFitTheCap() {
        // Netflix-like: 53 MB per replay, a cap of 212 MB, long rounds of 14 MB, 37 MB moved by six short rounds and
        // the first long round: ten more long rounds (140 MB) fit.
        #expect(
            ReplayClient.confirmsLongRound(
                fewestRounds: 10, perRound: 14_000_000, moved: 37_000_000,
                maximumBytes: 212_000_000))
        // Deezer-like: 6.2 MB per replay, a cap of 24.8 MB, the long round the whole trace: they do not.
        #expect(
            !ReplayClient.confirmsLongRound(
                fewestRounds: 10, perRound: 12_400_000, moved: 16_000_000,
                maximumBytes: 24_800_000))
        // Exactly at the cap fits; a byte over does not.
        #expect(ReplayClient.confirmsLongRound(fewestRounds: 2, perRound: 10, moved: 80, maximumBytes: 100))
        #expect(!ReplayClient.confirmsLongRound(fewestRounds: 2, perRound: 10, moved: 81, maximumBytes: 100))
        // Netflix on the kernel testbed: its segments come at their recorded times, so rounds cost seconds; ten long
        // rounds of 12 s after 110 s of short rounds pass a time cap of 124 s, whatever the bytes.
        #expect(
            !ReplayClient.confirmsLongRound(
                fewestRounds: 10, perRound: 14_000_000, moved: 37_000_000,
                maximumBytes: 212_000_000, perRoundSeconds: 12, elapsedSeconds: 110, timeLimitSeconds: 124))
        #expect(
            ReplayClient.confirmsLongRound(
                fewestRounds: 10, perRound: 14_000_000, moved: 37_000_000,
                maximumBytes: 212_000_000, perRoundSeconds: 1.2, elapsedSeconds: 110, timeLimitSeconds: 124))
        // No number of rounds could confirm it, or the product overflows: no.
        #expect(!ReplayClient.confirmsLongRound(fewestRounds: nil, perRound: 10, moved: 0, maximumBytes: 100))
        #expect(!ReplayClient.confirmsLongRound(fewestRounds: .max, perRound: 10, moved: 0, maximumBytes: .max))
    }

    /// A replay's samples every 10 ms over `megabytes`, at `rate(received megabytes)` Mbit/s.
    static func series(megabytes: Double, rate: (Double) -> Double) -> ThroughputSeries {
        let interval = 0.01
        var received = 0.0
        var mbps: [Double] = []
        while received < megabytes - 1e-9 {
            let bytes = min(rate(received) * interval / 8, megabytes - received)
            mbps.append(bytes * 8 / interval)
            received += bytes
        }
        return ThroughputSeries(mbps: mbps, interval: interval)
    }

    @Test("the rounds that confirm a long round are cut half as far again as where its samples put the change")
    func confirmingCutFollowsTheChange() throws {
        let library = ReplayLibrary(directory: TestResources.fixtureReplays)
        var plan0 = AdaptivePlan(
            test: try ReplayClient.Test.load("tinyweb", from: library, catalog: try library.catalog()))
        plan0.shortRound = .bytes(600_000)
        plan0.floorRound = .bytes(7_000_000)
        plan0.floorRoundBytes = 14_000_000
        let steady = Self.series(megabytes: 7) { _ in 100 }
        // The cut in bytes (a TCP plan's is always in bytes; `nil` would fail every check below).
        func cut(
            _ original: ThroughputSeries, control: ThroughputSeries? = nil, slower: Bool = true,
            plan: AdaptivePlan? = nil
        ) -> Int? {
            let chosen = ReplayClient.confirmingCut(
                original: original, control: control ?? steady, slower: slower, plan: plan ?? plan0)
            if case .bytes(let bytes) = chosen { return bytes }
            return nil
        }
        // Full speed for 3 MB, then half: the change at 3 MB (bins of 0.14 MB), the cut at about 4.5 MB.
        let after3 = try #require(cut(Self.series(megabytes: 7) { $0 < 3 ? 100 : 50 }))
        #expect((4_300_000...4_700_000).contains(after3), "\(after3)")
        // The same with the app's slow start slower than its control's (30 against 60 Mbit/s over the first 0.3 MB,
        // as two fresh connections may be): the first part differs a little; still about 4.5 MB.
        let slowStart = try #require(
            cut(
                Self.series(megabytes: 7) { $0 < 0.3 ? 30 : ($0 < 3 ? 100 : 50) },
                control: Self.series(megabytes: 7) { $0 < 0.3 ? 60 : 100 }))
        #expect((4_300_000...4_700_000).contains(slowStart), "\(slowStart)")
        // After 1 MB: about 1.5 MB.
        let after1 = try #require(cut(Self.series(megabytes: 7) { $0 < 1 ? 100 : 50 }))
        #expect((1_300_000...1_700_000).contains(after1), "\(after1)")
        // After 0.2 MB: the change lies inside the first tenth of the round, which the split never separates (a
        // throttle from nearly the first byte looks like one throughout): the floor round's cut.
        #expect(cut(Self.series(megabytes: 7) { $0 < 0.2 ? 100 : 50 }) == 7_000_000)
        // Never under the short round's cut.
        var longShort = plan0
        longShort.shortRound = .bytes(2_000_000)
        #expect(cut(Self.series(megabytes: 7) { $0 < 1 ? 100 : 50 }, plan: longShort) == 2_000_000)
        // After 6 MB: 9 MB would pass the floor round's 7 MB; the floor round's cut.
        #expect(cut(Self.series(megabytes: 7) { $0 < 6 ? 100 : 50 }) == 7_000_000)
        // A throttle throughout (a constant cap at 60 %), or none: no change to follow, the floor round's cut.
        #expect(cut(Self.series(megabytes: 7) { _ in 60 }) == 7_000_000)
        #expect(cut(Self.series(megabytes: 7) { _ in 100 }) == 7_000_000)
        // A throttle that stops (the first 3 MB slowed): not one that starts; the floor round's cut.
        #expect(cut(Self.series(megabytes: 7) { $0 < 3 ? 50 : 100 }) == 7_000_000)
        // The app faster after 3 MB (a port test whose control, on port 443, is throttled after 3 MB): the same cut
        // when the long round was faster, the floor round's when it was slower.
        let faster = Self.series(megabytes: 7) { $0 < 3 ? 50 : 100 }
        let slowControl = Self.series(megabytes: 7) { $0 < 3 ? 50 : 25 }
        let fasterCut = try #require(cut(faster, control: slowControl, slower: false))
        #expect((4_300_000...4_700_000).contains(fasterCut), "\(fasterCut)")
        #expect(cut(faster, control: slowControl, slower: true) == 7_000_000)
        // What a confirming round is expected to move: both replays' cut.
        #expect(AdaptivePlan.expectedBytes(of: .bytes(4_500_000), in: plan0) == 9_000_000)
    }

    @Test("the result schema (Docs/result.schema.json) lists every reason an adaptive test can stop for")
    func schemaListsEveryStopReason() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestResources.packageRoot + "/Docs/result.schema.json"))
        func find(_ value: Any) -> [String]? {
            if let object = value as? [String: Any] {
                if let stop = object["stopReason"] as? [String: Any], let values = stop["enum"] as? [Any] {
                    return values.compactMap { $0 as? String }
                }
                for child in object.values { if let found = find(child) { return found } }
            }
            return nil
        }
        let listed = try #require(find(try JSONSerialization.jsonObject(with: data)))
        #expect(Set(listed) == Set(AdaptiveStopReason.allCases.map(\.rawValue)))
    }

    @Test("a test's replays ask the server for the client's public address once per port, not once per replay")
    func addressDiscoveredOncePerTest() async throws {
        let (server, tests) = try await Harness.start(["tinyweb"])
        defer { Task { await server.stop() } }
        var configuration = Harness.configuration(server)
        configuration.addressDiscovery = .always
        configuration.timing.addressAttempts = 1
        let client = ReplayClient(configuration: configuration)
        let trace = tests[0].original
        let port = Int(try #require(trace.flows.first?.serverPort))
        // An answer already in the test's cache is declared as it is: no discovery runs (on loopback it could only
        // have failed, which declares 127.0.0.1).
        let known = PublicAddressCache()
        known.record("198.18.5.9", port: port)
        _ = try await client.replaySession(
            trace, role: .original, historyCount: 1, endOfTest: false, appDuration: nil, address: "127.0.0.1",
            tls: try client.makeTLS(), keepsRefusedSamples: true, publicAddresses: known, onProgress: { _ in })
        #expect(server.snapshot.declarations.last?.realIP == "198.18.5.9")
        // A port not asked yet is asked, and what it answered (here most likely nobody listening on the recorded
        // port: a failure, kept as such) is recorded for the rounds after it and declared.
        let fresh = PublicAddressCache()
        #expect(fresh.answer(port: port) == nil)
        _ = try await client.replaySession(
            trace, role: .original, historyCount: 2, endOfTest: false, appDuration: nil, address: "127.0.0.1",
            tls: try client.makeTLS(), keepsRefusedSamples: true, publicAddresses: fresh, onProgress: { _ in })
        let answer = try #require(fresh.answer(port: port))
        #expect(server.snapshot.declarations.last?.realIP == (answer ?? "127.0.0.1"))
    }

    @Test(
        "a replay sends NoIperf and NoMobileStats without waiting for the permission, and Result;No with its samples")
    func declarationPipelined() async throws {
        // This server answers the permission only once NoIperf has arrived, and acknowledges the samples only once
        // Result;No has arrived: a client that waited for either answer first would time out here.
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.grantsAfterNoIperf = true
        behaviour.acknowledgesAfterResultNo = true
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        var configuration = Harness.configuration(server)
        configuration.timing.sideChannelRead = .seconds(5)
        let client = ReplayClient(configuration: configuration)
        let outcome = try await client.replaySession(
            tests[0].original, role: .original, historyCount: 1, endOfTest: true, appDuration: nil,
            address: "127.0.0.1", tls: try client.makeTLS(), onProgress: { _ in })
        #expect(outcome.outcome.bytesReceived > 0)
        let messages = try #require(server.snapshot.messages.first)
        #expect(Array(messages.dropFirst().prefix(3)) == ["[-1, null, null]", "NoIperf", "NoMobileStats"])
        #expect(messages.last == "Result;No")
        #expect(server.snapshot.uploads.count == 1)
    }

    @Test(
        "a replay's next side channel is opened ahead; one the server closes before answering costs a fresh one",
        arguments: [false, true])
    func sideChannelsOpenedAhead(closesAtFirstBytes: Bool) async throws {
        // Every second side channel the server accepts (each one opened ahead, after the first replay's own) is
        // closed without an answer: at once (the client's TLS handshake fails and the replay connects anew) or
        // when the declaration arrives (the replay finds it closed and declares again on a fresh connection).
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.closeSideChannelsAccepted = { $0 % 2 == 1 }
        behaviour.closesAtFirstBytes = closesAtFirstBytes
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let client = ReplayClient(configuration: Harness.configuration(server))
        let tls = try client.makeTLS()
        let ahead = SideChannelAhead()
        for historyCount in 1...3 {
            let outcome = try await client.replaySession(
                tests[0].original, role: .original, historyCount: historyCount, endOfTest: false, appDuration: nil,
                address: "127.0.0.1", tls: tls, ahead: ahead, onProgress: { _ in })
            #expect(outcome.outcome.bytesReceived > 0)
            // Each replay leaves the next one's side channel opening or open.
            #expect(ahead.isHolding)
        }
        ahead.discard()
        // Accepted in order: 1st replay's own, its ahead (closed), 2nd replay's own, its ahead (closed), 3rd replay's
        // own, its ahead (closed at once; closed by the client unused when the server waits for its first bytes).
        #expect(await waitUntil { server.snapshot.sideChannelsAccepted == 6 })
        let state = server.snapshot
        #expect(state.sideChannelsEvicted == (closesAtFirstBytes ? 2 : 3))
        #expect(state.declarations.map(\.historyCount) == [1, 2, 3])
        #expect(state.messages.count == 3 && state.messages.allSatisfy { !$0.isEmpty })

        // Without evictions each replay after the first declares on the connection the one before opened: one
        // connection per replay, and one left over, closed unused.
        let (calm, calmTests) = try await Harness.start(["tinyweb"])
        defer { Task { await calm.stop() } }
        let calmClient = ReplayClient(configuration: Harness.configuration(calm))
        let calmTLS = try calmClient.makeTLS()
        let calmAhead = SideChannelAhead()
        for historyCount in 1...3 {
            _ = try await calmClient.replaySession(
                calmTests[0].original, role: .original, historyCount: historyCount, endOfTest: false,
                appDuration: nil, address: "127.0.0.1", tls: calmTLS, ahead: calmAhead, onProgress: { _ in })
        }
        calmAhead.discard()
        #expect(await waitUntil { calm.snapshot.sideChannelsClosed == 4 })
        let calmState = calm.snapshot
        #expect(calmState.sideChannelsAccepted == 4)
        #expect(calmState.declarations.map(\.historyCount) == [1, 2, 3])
        #expect(calmState.messages.filter(\.isEmpty).count == 1)
    }

    @Test("a round's trace keeps waits up to a quarter second and shortens longer ones to it")
    func pausesShortened() {
        let pair = CSPair(
            clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 443)
        let recorded = [0.5, 0.6, 2.6, 2.7, 8.0]
        let packets = recorded.enumerated().map { index, time in
            ReplayPacket(
                csPair: pair, payload: [UInt8(index)], timestamp: time,
                kind: .tcp(responseLength: 1_000 * (index + 1), responseHash: "\(index)"))
        }
        let trace = ReplayTrace(packets: packets, udpClientPorts: [], tcpCSPairs: [pair.rawValue], name: "T")
        let longest = ReplayClient.longestRoundPause
        #expect(longest == 0.25)
        let shortened = trace.shorteningPauses(to: longest)
        // 0.5 s before the first packet and the waits of 2.0 s and 5.3 s become 0.25 s; the 0.1-s waits stay.
        let expected = [0.25, 0.35, 0.6, 0.7, 0.95]
        #expect(shortened.packets.count == expected.count)
        #expect(zip(shortened.packets.map(\.timestamp), expected).allSatisfy { abs($0 - $1) < 1e-9 })
        #expect(shortened.packets.map(\.payload) == packets.map(\.payload))
        #expect(shortened.packets.map(\.responseLength) == packets.map(\.responseLength))
        // A trace without long waits is left as it is (Deezer's and Pandora's rounds).
        let calm = trace.shorteningPauses(to: 10)
        #expect(calm == trace)
    }

    @Test("a prefix keeps the opening bytes, cuts a large response inside and a small one at its end")
    func prefix() throws {
        let pair = CSPair(
            clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 443)
        let packets = [
            ReplayPacket(
                csPair: pair, payload: Array(repeating: 1, count: 100), timestamp: 0,
                kind: .tcp(responseLength: 1_000, responseHash: "a")),
            ReplayPacket(
                csPair: pair, payload: Array(repeating: 2, count: 100), timestamp: 0.1,
                kind: .tcp(responseLength: 50_000, responseHash: "b")),
            ReplayPacket(
                csPair: pair, payload: Array(repeating: 3, count: 100), timestamp: 0.2,
                kind: .tcp(responseLength: 1_000, responseHash: "c")),
        ]
        let trace = ReplayTrace(packets: packets, udpClientPorts: [], tcpCSPairs: [pair.rawValue], name: "T")
        // 5 kB: the second response would end at 51.2 kB, past twice the cut: it is cut inside, to 3.8 kB.
        let small = trace.prefix(bytes: 5_000)
        #expect(small.packets.count == 2)
        #expect(small.packets[0].payload == packets[0].payload)
        #expect(small.packets[1].responseLength == 5_000 - 1_200)
        // 30 kB: the second response ends at 51.2 kB, under twice the cut: kept whole, and the prefix ends there.
        let whole = trace.prefix(bytes: 30_000)
        #expect(whole.packets.map(\.responseLength) == [1_000, 50_000])
        #expect(trace.prefix(bytes: 1_000_000) == trace)
    }
}
