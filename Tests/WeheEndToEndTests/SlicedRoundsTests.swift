import Foundation
import Synchronization
import Testing
import WeheCore
import WeheReplay
import WeheTestKit

@testable import WeheClient

/// A call's adaptive rounds as slices, against our server on loopback: the server serves the slice it is asked for,
/// both replays of a short round carry the slice's datagrams and no others, the long round the whole call.
/// Its replays last 0.6 s each, so the suite runs in CI's timing step, away from the parallel load of the rest.
@Suite("sliced UDP rounds on loopback", .timeLimit(.minutes(3)))
struct SlicedRoundsTests {
    @Test("each short round's replays receive the opening and the slice; the long round the whole call")
    func slicedRounds() async throws {
        let test = try LoopbackWorld.test("tinycall")
        // TinyCall: 52 datagrams of 60 bytes, 20 ms apart, 1.2 s. Its first 0.05 s and 0.3 s from 0.6 s: 18
        // datagrams. A replay of it lasts 0.6 s with the deadline's tail, in which the unsliced call would send 30.
        let slice = try #require(UDPSlice(openingSeconds: 0.05, from: 0.599, seconds: 0.3))
        var plan = AdaptivePlan(test: test)
        plan.unslicedShortRound = (plan.shortRound, plan.shortRoundBytes)
        plan.shortRound = .slice(slice)
        plan.rule.maximumRounds = 4
        let sliced = test.original.slice(slice)
        #expect(sliced.packets.count > 3 && sliced.packets.count < test.original.packets.count)
        let received = Mutex<[(round: Int, bytes: Int)]>([])
        let round = Mutex(1)
        let asked = plan
        let result = try await LoopbackWorld.run(address: "127.0.0.73") { world in
            try await ReplayClient(configuration: world.client(userID: "@slices001")).runAdaptive(
                test, plan: asked, fallBack: false
            ) { event in
                switch event {
                case .replayFinished(_, _, let outcome):
                    received.withLock { $0.append((round.withLock { $0 }, outcome.bytesReceived)) }
                case .roundFinished(_, let progress): round.withLock { $0 = progress.round + 1 }
                default: break
                }
            }
        }
        #expect(result.sensitive?.stopReason != nil)
        let replays = received.withLock { $0 }
        let rounds = round.withLock { $0 } - 1
        #expect(rounds >= 2 && replays.count == 2 * rounds, "\(replays)")
        // The server echoes the client's datagrams of the slice: a short round's replays receive at most the slice's
        // bytes (1 080), where the call's first 0.6 s (what the round's deadline lets a server that does not serve
        // slices send) hold 1 800. On a loaded machine a replay may lose its last datagrams to the deadline, so only
        // most of them need the slice's bytes nearly whole; the long round (the whole call, 3 000 bytes) is the one
        // that may receive more.
        let sliceBytes = sliced.bytesUp
        let short = replays.filter { $0.bytes <= sliceBytes }
        #expect(short.count >= replays.count - 2, "\(replays), slice \(sliceBytes) bytes")
        #expect(short.filter { $0.bytes > sliceBytes / 2 }.count >= short.count / 2, "\(replays)")
    }
}
