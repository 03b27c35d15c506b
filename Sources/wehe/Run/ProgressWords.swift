import Synchronization
import WeheClient
import WeheCore
import WeheReplay

/// The progress of a test in plain words, for the command line's progress lines and the dashboard's log: which app
/// is replayed and as what, how much of the test's data has moved, and about how long is left ("Replaying Netflix
/// (original): 12 MB of 54 MB, about 40 s left"), the totals from `TestCost` (the estimate said before the test).
/// Instead of replay ids and protocol states.
final class ProgressWords: Sendable {
    /// What is known of each test before it runs: its name and its cost (one run, no confirmation).
    struct Planned: Sendable {
        var name: String
        var bytes: Int
        var seconds: Double
    }

    let strings: Strings
    private let planned: [String: Planned]
    private let state = Mutex(State())

    /// The run in flight: what the finished replays moved and took, and the current replay.
    private struct State {
        var test = ""
        var doneBytes = 0
        var doneSeconds = 0.0
        var role = ReplayRole.original
        /// Elapsed seconds of the current replay at its last periodic line.
        var reportedAt = 0.0
    }

    /// Seconds of a replay between two periodic progress lines (the dashboard's log).
    static let reportEvery = 5.0

    init(strings: Strings, tests: [ReplayClient.Test]) {
        self.strings = strings
        var planned: [String: Planned] = [:]
        for test in tests {
            let cost = TestCost.of(test, mode: .published(confirmation: false))
            planned[test.entry.id] = Planned(name: test.entry.name, bytes: cost.bytes, seconds: cost.seconds)
        }
        self.planned = planned
    }

    /// The name of a test (its id when it was not planned).
    func name(_ test: String) -> String { planned[test]?.name ?? test }

    /// "Testing Netflix: about 54 MB and 40 s" (a confirmation run says that it is one).
    func started(_ test: String, isConfirmation: Bool) -> String {
        state.withLock { $0 = State(test: test) }
        let cost = planned[test].map { (Terminal.bytes($0.bytes), RunPlan.duration($0.seconds)) }
        return strings.testStartedWords(name(test), bytes: cost?.0, time: cost?.1, confirmation: isConfirmation)
    }

    /// "Round 3 of 10 of Deezer: about 12 MB and 2 s; 98 MB and 16 s left with the later rounds", before each
    /// further round of an interleaved run (every round is both replays once, as the published test).
    func roundStarted(_ test: String, round: Int, of rounds: Int) -> String {
        state.withLock { $0 = State(test: test) }
        guard let plan = planned[test] else {
            return strings.roundStartedWords(name(test), round: round, of: rounds, cost: nil, left: nil)
        }
        let remaining = rounds - round + 1
        return strings.roundStartedWords(
            name(test), round: round, of: rounds,
            cost: (Terminal.bytes(plan.bytes), RunPlan.duration(plan.seconds)),
            left: (
                Terminal.bytes(plan.bytes * remaining), RunPlan.duration(plan.seconds * Double(remaining))
            ))
    }

    /// "Replaying Netflix (original, the app's recorded traffic)".
    func replayStarted(_ test: String, role: ReplayRole) -> String {
        state.withLock {
            $0.role = role
            $0.reportedAt = 0
        }
        return strings.replayingWords(name(test), role: role, progress: nil)
    }

    /// "Replaying Netflix (original): 12 MB of 54 MB, about 40 s left"; without the name ("12 MB of 54 MB, about
    /// 40 s left") when `named` is false, for a line under the one that names the replay.
    func progress(_ test: String, _ snapshot: ReplayProgress, named: Bool = true) -> String {
        let seconds = snapshot.elapsed.inSeconds
        let moved = snapshot.bytesReceived + snapshot.bytesSent
        let (done, doneSeconds, role) = state.withLock { ($0.doneBytes, $0.doneSeconds, $0.role) }
        guard let plan = planned[test] else {
            let text = (Terminal.bytes(moved), String?.none, String?.none)
            return named
                ? strings.replayingWords(name(test), role: role, progress: text)
                : strings.movedWords(text.0, total: nil, left: nil)
        }
        let total = max(plan.bytes, done + moved)
        // The recorded pace says how long is left; a replay slower than recorded (throttled) is judged by its own
        // pace instead.
        let byPlan = plan.seconds - doneSeconds - seconds
        let fraction = snapshot.fractionDone
        let byPace = fraction > 0.05 ? seconds / fraction * (1 - fraction) : 0
        let left = max(0, byPlan, byPace)
        let text = (Terminal.bytes(done + moved), Terminal.bytes(total), RunPlan.duration(left))
        return named
            ? strings.replayingWords(name(test), role: role, progress: text)
            : strings.movedWords(text.0, total: text.1, left: text.2)
    }

    /// The progress line every `reportEvery` seconds of a replay, `nil` in between.
    func periodicProgress(_ test: String, _ snapshot: ReplayProgress) -> String? {
        let seconds = snapshot.elapsed.inSeconds
        let due = state.withLock { state -> Bool in
            guard seconds - state.reportedAt >= Self.reportEvery else { return false }
            state.reportedAt = seconds
            return true
        }
        return due ? progress(test, snapshot) : nil
    }

    /// Records a finished replay (its bytes and time count as done for the rest of the test).
    func replayFinished(_ outcome: ReplayOutcome) {
        state.withLock {
            $0.doneBytes += outcome.bytesReceived + outcome.bytesSent
            $0.doneSeconds += outcome.duration.inSeconds
        }
    }
}
