import Foundation
import Synchronization
import Testing
import WeheClient
import WeheCore
import WeheStore
import WeheTestKit

/// The interleaved mode against our server on loopback: the published test, then more rounds, each an
/// ordinary published test on the wire (its own history count, both replays), the sensitive verdict from every
/// round, stored in the history beside the published verdict.
@Suite("interleaved rounds on loopback", .timeLimit(.minutes(3)))
struct InterleavedRoundsTests {
    @Test("8 rounds: 16 replays, one history count per round, a sensitive summary over 8 rounds, stored")
    func eightRounds() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackWorld.withHistory { history in
            let finished = Mutex<[ReplayRole]>([])
            let result = try await LoopbackWorld.run(address: "127.0.0.71") { world in
                var configuration = world.client(userID: "@rounds001", store: history)
                configuration.confirmation = false
                let result = try await ReplayClient(configuration: configuration).runInterleaved(test, rounds: 8) {
                    if case .replayFinished(_, let role, _) = $0 { finished.withLock { $0.append(role) } }
                }
                // Every round reached the server as a published test: both replays under its own history count.
                for count in result.historyCount..<(result.historyCount + 8) {
                    let record = try #require(
                        try await world.serverStore.test(TestKey(userID: "@rounds001", historyCount: count)))
                    #expect(Set(record.replays.map(\.key.testID)) == [0, 1], "round with history count \(count)")
                }
                return result
            }
            let roles = finished.withLock { $0 }
            #expect(roles.count == 16)
            #expect(roles.filter { $0 == .original }.count == 8)
            let sensitive = try #require(result.sensitive)
            #expect(sensitive.rounds == 8)
            #expect(sensitive.originalMeansMbps.count == 8 && sensitive.controlMeansMbps.count == 8)
            #expect(sensitive.originalMeansMbps.allSatisfy { $0 > 0 })
            #expect(sensitive.verdict != .inconclusive && sensitive.verdict != .blocked)
            #expect(sensitive.pValue > 0 && sensitive.pValue <= 1)
            #expect((sensitive.bytesReceived ?? 0) >= 8 * (test.original.bytesDown + test.control.bytesDown))
            // The published verdict is the first round's, as `run` gives it; the history has it and the sensitive one.
            let stored = try #require(
                try await history.test(TestKey(userID: "@rounds001", historyCount: result.historyCount)))
            #expect(stored.mainAnalysis?.summary == result.summary)
            #expect(stored.sensitive == sensitive)
            // The change in time within the test, from every round's samples, stored with it.
            let change = try #require(sensitive.changePoint)
            #expect(change.rounds == 8)
            #expect(change.pValue > 0 && change.pValue <= 1)
            #expect(stored.sensitive?.changePoint == change)
            let rows = try await history.history(userID: "@rounds001", beforeHistoryCount: nil, limit: 20)
            #expect(rows.count == 1)  // the extra rounds are not in the client's history
        }
    }

    @Test("one round: run plus an inconclusive one-round summary, nothing extra on the wire")
    func oneRound() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        let result = try await LoopbackWorld.run(address: "127.0.0.72") { world in
            var configuration = world.client(userID: "@rounds002")
            configuration.confirmation = false
            let result = try await ReplayClient(configuration: configuration).runInterleaved(test, rounds: 1)
            #expect(
                try await world.serverStore.test(TestKey(userID: "@rounds002", historyCount: result.historyCount + 1))
                    == nil)
            return result
        }
        #expect(result.sensitiveSummary.verdict == .inconclusive)
        #expect(result.sensitiveSummary.rounds == 1)
        #expect(result.sensitiveSummary.note?.hasPrefix("too few rounds (1)") == true)
        // One round can never show a change in time: reported as not found, with the reason.
        #expect(result.sensitiveSummary.changePoint?.found == false)
        #expect(result.sensitiveSummary.changePoint?.note != nil)
    }
}
