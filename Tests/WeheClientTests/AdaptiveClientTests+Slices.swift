import Foundation
import Synchronization
import Testing
import WeheCore
import WeheReplay
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheClient

/// The short rounds of UDP calls: how long they last, slices of the busiest second, and a server without slices.
extension AdaptiveClientTests {
    @Test("a short UDP round lasts until the trace's datagrams reach a twentieth of their bytes, 1 s at least")
    func udpRound() throws {
        let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 3478)
        func trace(_ datagrams: [(time: Double, bytes: Int)]) -> ReplayTrace {
            ReplayTrace(
                packets: datagrams.map {
                    ReplayPacket(
                        csPair: pair, payload: Array(repeating: 7, count: $0.bytes), timestamp: $0.time,
                        kind: .udp(end: false))
                }, udpClientPorts: ["40000"], tcpCSPairs: [], name: "call")
        }
        // A call's opening: 112 bytes at 0 s, silence until 2 s, then 1 000 bytes every 0.1 s until 15 s (131 000
        // bytes): a twentieth (6 555 bytes) is reached at 2.6 s, which is the round, not 1 s.
        var call: [(time: Double, bytes: Int)] = [(0, 112)]
        for step in 0..<131 { call.append((2 + Double(step) * 0.1, 1_000)) }
        let round = AdaptivePlan.shortUDPRound(trace(call), replaySeconds: 15)
        #expect(abs(round.seconds - 2.6) < 1e-9)
        #expect(abs(round.fraction - Double(112 + 7 * 1_000) / Double(112 + 131_000)) < 1e-12)
        // An even stream of 20 s: a twentieth of the time and of the bytes agree (1 s).
        let even = (0..<200).map { (time: Double($0) * 0.1, bytes: 500) }
        let evenRound = AdaptivePlan.shortUDPRound(trace(even), replaySeconds: 20)
        #expect(abs(evenRound.seconds - 1.0) < 0.11)
        // Never shorter than 1 s, never longer than the replay.
        #expect(AdaptivePlan.shortUDPRound(trace([(0, 100), (0.2, 100)]), replaySeconds: 3).seconds == 1)
        #expect(AdaptivePlan.shortUDPRound(trace([(0, 10), (30, 1_000)]), replaySeconds: 20).seconds == 20)
    }

    @Test("a one-flow call's short rounds are slices of its busiest second; a server without slices gets prefixes")
    func udpSlicePlan() throws {
        let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 3478)
        func trace(_ datagrams: [(time: Double, bytes: Int)], pairs: [CSPair] = [pair]) -> ReplayTrace {
            ReplayTrace(
                packets: datagrams.enumerated().map {
                    ReplayPacket(
                        csPair: pairs[$0.offset % pairs.count], payload: Array(repeating: 7, count: $0.element.bytes),
                        timestamp: $0.element.time, kind: .udp(end: false))
                }, udpClientPorts: pairs.map(\.clientPortString), tcpCSPairs: [], name: "call")
        }
        // 112 bytes at 0 s, silence until 2 s, 500 bytes every 0.1 s until 15 s, 1 000 bytes every 0.1 s from 9 s
        // to 10 s: the busiest second starts at 9 s.
        var call: [(time: Double, bytes: Int)] = [(0, 112)]
        for step in 0..<130 {
            let time = 2 + Double(step) * 0.1
            call.append((time, time >= 8.95 && time < 9.95 ? 1_000 : 500))
        }
        let found = try #require(AdaptivePlan.udpSlice(trace(call), replaySeconds: 15))
        #expect(found.slice.openingSeconds == AdaptivePlan.sliceOpeningSeconds)
        #expect(abs(found.slice.from - 9) < 1e-9, "\(found.slice)")
        #expect(found.slice.seconds == 1)
        let total = call.reduce(0) { $0 + $1.bytes }
        #expect(abs(found.fraction - Double(112 + 10_000) / Double(total)) < 1e-12)
        // Not sliced: a call of two flows, one too short for a stretch after its opening, an even stream.
        let second = CSPair(clientAddress: "10.0.0.1", clientPort: 40001, serverAddress: "10.0.0.2", serverPort: 3478)
        #expect(AdaptivePlan.udpSlice(trace(call, pairs: [pair, second]), replaySeconds: 15) == nil)
        #expect(AdaptivePlan.udpSlice(trace([(0, 100), (0.5, 100), (1.1, 100)]), replaySeconds: 2) == nil)
        let even = (0..<200).map { (time: Double($0) * 0.1, bytes: 500) }
        #expect(AdaptivePlan.udpSlice(trace(even), replaySeconds: 20) == nil)

        // The plan of such a call: slices, with the first seconds kept for a server that serves whole replays only.
        let entry = CatalogEntry(
            id: "call", name: "Call", image: "call", category: .conferencing, durationSeconds: 15, sizeMB: 2.6,
            originalFile: "call.json", controlFile: "callRandom.json")
        var plan = AdaptivePlan(test: ReplayClient.Test(entry: entry, original: trace(call), control: trace(call)))
        #expect(plan.shortRound == .slice(found.slice))
        #expect(plan.shortRoundBytes == Int((2 * 2_600_000 * found.fraction).rounded(.up)))
        let unsliced = try #require(plan.unslicedShortRound)
        #expect(unsliced.cut == .seconds(AdaptivePlan.shortUDPRound(trace(call), replaySeconds: 15).seconds))
        plan.dropSlices()
        #expect(plan.shortRound == unsliced.cut && plan.shortRoundBytes == unsliced.bytes)
        #expect(plan.unslicedShortRound == nil)
    }

    /// TinyCall run adaptively against `behaviour`'s scripted server, its short rounds asking for a slice (the
    /// call's first 0.05 s and 0.3 s from 0.6 s; TinyCall is too short for the plan to slice it), `rounds` rounds at
    /// most; the change spec of each side channel in order.
    static func runSliced(_ behaviour: FakeWeheServer.Behaviour = .init(), rounds: Int) async throws -> (
        result: TestResult, slice: UDPSlice, specs: [String]
    ) {
        let (server, tests) = try await Harness.start(["tinycall"], behaviour)
        defer { Task { await server.stop() } }
        var plan = AdaptivePlan(test: tests[0])
        let slice = try #require(UDPSlice(openingSeconds: 0.05, from: 0.599, seconds: 0.3))
        plan.unslicedShortRound = (plan.shortRound, plan.shortRoundBytes)
        plan.shortRound = .slice(slice)
        plan.rule.maximumRounds = rounds
        let result = try await ReplayClient(configuration: Harness.configuration(server)).runAdaptive(
            tests[0], plan: plan, fallBack: false)
        return (result, slice, server.snapshot.messages.filter { $0.count > 1 }.map { $0[1] })
    }

    @Test("a server that serves whole replays only: the first round asks for the slice, the rest are prefixes")
    func sliceFallback() async throws {
        // The scripted server grants as the published one does, without the slice field.
        let (result, slice, specs) = try await Self.runSliced(rounds: 3)
        #expect(result.sensitive?.rounds == 3)
        #expect(specs.count == 6)
        #expect(Array(specs.prefix(2)) == [slice.changeSpec, slice.changeSpec])
        #expect(specs.dropFirst(2).allSatisfy { $0 == SideChannelMessage.noChange }, "\(specs)")
    }

    @Test("a server that refuses the slice's change spec: the rounds start again as the call's first seconds")
    func sliceRefused() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.refusesChangeSpecs = true
        let (result, slice, specs) = try await Self.runSliced(behaviour, rounds: 2)
        // The refused replay, then two rounds of two replays without a slice; the result is the adaptive one.
        #expect(specs == [slice.changeSpec] + Array(repeating: SideChannelMessage.noChange, count: 4), "\(specs)")
        #expect(result.sensitive?.rounds == 2)
        #expect(result.sensitive?.stopReason != nil)
    }

    @Test(
        "a round replays without the trace's long waits, and says when its last bytes came, inside its last sample")
    func roundsKnowTheirLastBytes() async throws {
        let (server, tests) = try await Harness.start(["tinysix"])
        defer { Task { await server.stop() } }
        // The client's copy waits ten seconds after its first response, as a paced video trace waits for its
        // buffer (the server answers each payload when it has read it, whatever the client's schedule).
        var test = tests[0]
        let wait = 10.0
        for index in test.original.packets.indices.dropFirst() {
            test.original.packets[index].timestamp += wait
            test.control.packets[index].timestamp += wait
        }
        // The short round (64 kB) reaches past the wait, into the third payload.
        #expect(test.original.prefix(bytes: 64_000).packets.count == 3)
        let client = ReplayClient(configuration: Harness.configuration(server))
        let plan = AdaptivePlan(test: test)
        #expect(plan.shortRound != plan.floorRound)
        var replays: [ReplayOutcome] = []
        for (index, long) in [false, true].enumerated() {
            let round = try await client.adaptiveRound(
                test, cut: long ? plan.floorRound : plan.shortRound, isLongRound: long, historyCount: index + 1,
                address: client.resolveServer(), tls: client.makeTLS(), onEvent: { _ in })
            #expect(round.outcomes.count == 2)
            replays += round.outcomes.values
        }
        // Both rounds shortened the wait to a quarter second: no replay lasted the recorded ten seconds (on loopback
        // each takes well under one).
        for outcome in replays {
            #expect(outcome.packetsSent == 3)
            #expect(outcome.duration < .seconds(wait))
        }
        // The instant lies in the interval of the last sample that counts bytes, which may end after the replay
        // did (responses in flight arrive after a short round's cut), so the rates over equal bytes can end there.
        for outcome in replays {
            let last = try #require(outcome.lastArrival)
            let index = try #require(outcome.samples.mbps.lastIndex { $0 > 0 })
            #expect(outcome.sampleInterval * index <= last && last < outcome.sampleInterval * (index + 1))
        }
    }
}
