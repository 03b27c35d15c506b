import Foundation
import Logging
import Synchronization
import Testing
import WeheClient
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheTestbed
import WeheWire

/// A strongly throttled replay that reaches the time limit is judged on what it covered, and the
/// result says so. Our client, our throttling proxy and our server on loopback (as `DetectionThroughProxyTests`):
/// the Molotov TV original (13 MB, matched by its server name) gets 1 Mbit/s, and the client's replay deadline is
/// lowered from 45 s to 3 s (`Timing.replayDeadline`), so every original replay is stopped after about 0.4 MB while
/// the unthrottled control finishes. Eight interleaved rounds give the sensitive verdict.
@Suite(
    "A throttled replay stopped by the time limit (loopback proxy, published Molotov TV trace)",
    .serialized,
    .timeLimit(.minutes(8)),
    .enabled(if: TestResources.hasSharedReplays, "the published traces in ../shared/replays are needed")
)
struct TimeLimitThroughProxyTests {
    static let deadline = Duration.seconds(3)
    static let throttleBitsPerSecond = 1_000_000

    typealias Replay = InterleavedThroughProxy.Replay

    /// Runs the interleaved rounds through the proxy; returns the result, every replay's outcome in order, the
    /// original's bytes and the client's history.
    private func runRounds() async throws -> (TestResult, [Replay], Int, InMemoryResultStore) {
        let history = InMemoryResultStore(anonymization: .default)
        let run = try await InterleavedThroughProxy.run(
            app: "molotovtv", pattern: "mlflux", shaping: .init(rateBitsPerSecond: Self.throttleBitsPerSecond),
            userID: "@timelimit1", rounds: 8
        ) { client in
            client.timing.replayDeadline = Self.deadline
            client.store = history
        }
        return (run.result, run.replays, run.originalBytes, history)
    }

    @Test("each original replay stops at the limit; both verdicts judge the covered part, and the result says so")
    func throttledReplayCutShort() async throws {
        // The test needs unthrottled controls. On a machine loaded by the rest of the suite a control replay
        // (through the debug-built proxy) has stalled, and a round whose control is as slow as the throttled
        // original makes the 8-round sign-flip test miss its level: such a run measured the machine, not the
        // verdict, and is run again (at most three times; the assertions below judge the last run).
        var attempt = 0
        var run = try await runRounds()
        while true {
            attempt += 1
            let controlRates = run.1.filter { $0.role == .control }.map {
                Double($0.bytesReceived) * 8 / max($0.seconds, 0.001) / 1e6
            }
            let slowest = controlRates.min() ?? 0
            print("time limit test, attempt \(attempt): slowest control \(slowest) Mbit/s")
            if slowest >= 5 * Double(Self.throttleBitsPerSecond) / 1e6 || attempt == 3 { break }
            run = try await runRounds()
        }
        let (result, outcomes, originalBytes, history) = run
        #expect(outcomes.count == 16)
        let originals = outcomes.filter { $0.role == .original }
        #expect(originals.count == 8)
        for outcome in originals {
            // Stopped at the deadline after a small part of the 13 MB: 1 Mbit/s for 3 s is about 0.4 MB.
            #expect(outcome.reachedDeadline)
            #expect(outcome.duration >= Self.deadline && outcome.duration < Self.deadline + .seconds(2))
            #expect(outcome.bytesReceived > 0 && outcome.bytesReceived < originalBytes / 10)
        }

        // The published verdict: the samples end at the deadline, and the analysis compares what they covered. The
        // replay stops when the deadline's task runs; on a loaded machine that was 0.14 s late once, so the bound
        // allows half a second (a replay that ran on past the deadline would take about 100 s at 1 Mbit/s).
        let original = try #require(result.original)
        #expect(original.reachedDeadline)
        #expect(result.originalSamples.times.last ?? 0 <= Double(Self.deadline.components.seconds) + 0.5)
        #expect(result.summary.originalMeanMbps < 1.5, "\(result.summary)")
        #expect(result.replaysCutShort.first == .original)
        let note = try #require(result.timeLimitNote)
        #expect(note.hasPrefix("the original replay reached the time limit after "), "\(note)")
        #expect(note.hasSuffix(": the verdicts judge the part it covered") || note.contains("the part they covered"))
        // The client's history keeps it, so `wehe results show` and the dashboard can say so later.
        let stored = try #require(
            try await history.test(TestKey(userID: result.userID, historyCount: result.historyCount)))
        #expect(stored.replay(0)?.reachedTimeLimit == true)
        #expect(stored.replay(1)?.reachedTimeLimit == (result.control?.reachedDeadline ?? false))
        let storedNote = try #require(stored.timeLimitNote)
        #expect(storedNote.hasPrefix("time limit: the original replay was stopped after "), "\(storedNote)")

        // The sensitive verdict: each round's original mean is the covered part's throughput (bytes received over
        // the covered time), not the full trace's bytes over anything longer.
        let sensitive = try #require(result.sensitive)
        #expect(sensitive.rounds == 8)
        for (mean, outcome) in zip(sensitive.originalMeansMbps, originals) {
            let covered = Double(outcome.bytesReceived) * 8 / outcome.seconds / 1e6
            #expect(mean > 0.5 * covered && mean < 1.5 * covered, "round mean \(mean), covered \(covered) Mbit/s")
            #expect(mean < 1.5, "the throttle is 1 Mbit/s")
        }
        let cutShort = outcomes.filter(\.reachedDeadline).count
        #expect(
            sensitive.note?.contains(
                "\(cutShort) of 16 replays reached the time limit; each is judged on the part it covered") == true,
            "\(sensitive.note ?? "no note")")
        // The unthrottled control runs at tens of Mbit/s on loopback; under a heavily loaded machine it was once
        // as slow as 9 Mbit/s (see DetectionThroughProxyTests), still far above the 1 Mbit/s throttle.
        #expect(sensitive.verdict == .differentiation, "\(sensitive)")
        #expect(sensitive.direction == .throttled)
        #expect(sensitive.slowdown > 0.5)
        #expect(result.verdict == .differentiation, "\(result.summary)")
    }
}
