import WeheClient
import WeheReplay

/// What a command costs on the fleet, said before it starts: every step (a test with its confirmation, a
/// localization, a DPI search) runs in an access envelope of its own, which M-Lab holds open for 10 minutes at most,
/// and each envelope needs a locate answer whose tokens are still valid (1 minute), so about one locate call per
/// step, against locate's limit per address and User-Agent.
struct FleetBudget {
    /// Seconds a step needs besides its replays (connections, the analyzer's answer).
    static let overheadSeconds = 30.0

    /// About how long a localization of `test` takes: the original replay on the test's server, then both replays
    /// on the pair's two servers at once (a confirmation round included), and the same overhead as a test.
    static func localizationSeconds(_ test: ReplayClient.Test) -> Double {
        RunPlan.cost(test).seconds * 2 + overheadSeconds
    }

    /// Locate calls at most.
    let locateCalls: Int
    /// Steps (envelopes) at most.
    let steps: Int
    /// The progress line before the first test; `nil` for a single test without follow-up steps.
    let announcement: String?

    /// Plans `tests` on `fleet`.
    /// - Throws: `CLIError` `.invalidInput` naming each test that cannot fit in one envelope, before anything runs.
    init(
        tests: [ReplayClient.Test], fleet: FleetConfiguration, confirmation: Bool, rounds: Int?, adaptive: Bool = false,
        localizing: Bool, searching: Bool
    ) throws {
        let deadline = fleet.envelopeDeadline.inSeconds
        var tooLong: [String] = []
        for test in tests {
            let replays = RunPlan.cost(test).seconds
            let runs = Double(rounds ?? 1) + (confirmation ? 1 : 0)
            // An adaptive verdict stops at its time cap at the latest (it has no confirmation run).
            let needed =
                adaptive
                ? AdaptivePlan(test: test).timeLimitSeconds + Self.overheadSeconds
                : replays * runs + Self.overheadSeconds
            if needed > deadline {
                var line =
                    "\(test.entry.id) needs about \(RunPlan.duration(needed)) (\(RunPlan.duration(replays)) per round"
                    + "\(rounds.map { " × \($0) rounds" } ?? "")\(confirmation ? " and a confirmation run" : ""))"
                let fitting = Int(((deadline - Self.overheadSeconds) / replays).rounded(.down)) - (confirmation ? 1 : 0)
                if rounds != nil { line += "; at most \(max(fitting, 0)) rounds fit" }
                tooLong.append(line)
            }
        }
        if !tooLong.isEmpty {
            throw CLIError(
                code: .invalidInput,
                "not started: an M-Lab access envelope stays open \(RunPlan.duration(deadline)) at most and a test "
                    + "must fit in one: " + tooLong.joined(separator: "; ")
                    + " (a private server, --server <host>, has no such limit)")
        }
        let perTest = 1 + (localizing ? 1 : 0) + (searching ? 1 : 0)
        steps = tests.count * perTest
        // A localization also locates each site of its pair.
        locateCalls = FleetSession.locateCalls(forSteps: steps) + (localizing ? 2 * tests.count : 0)
        guard steps > 1 else {
            announcement = nil
            return
        }
        var line =
            "fleet: each test\(perTest > 1 ? " and each follow-up" : "") runs in an access envelope of its own "
            + "(M-Lab holds one open for \(RunPlan.duration(deadline)) at most; its tokens are valid for "
            + "\(RunPlan.duration(fleet.tokenLifetime.inSeconds))): up to \(locateCalls) locate call"
            + "\(locateCalls == 1 ? "" : "s") for \(tests.count) test\(tests.count == 1 ? "" : "s") "
            + "(locate allows \(fleet.locateRequestsPerHour) an hour per address)"
        if locateCalls > fleet.locateRequestsPerHour {
            line += "; more than that limit: locate may answer 429 partway (exit 34), so run fewer tests at once"
        }
        announcement = line
    }
}
