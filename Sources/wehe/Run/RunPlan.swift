import WeheClient
import WeheCore

/// What a series of tests will cost, from the catalog and the traces: for `--all` (and any run of several tests),
/// "test k of n" with the time and data still ahead, before the first test and after each one, and each test's
/// verdict line as soon as it ends.
struct RunPlan {
    /// One test's estimate.
    struct Cost {
        /// Seconds: both replays at their recorded pace (the catalog time is one replay's).
        var seconds: Double
        /// Bytes both ways, both replays.
        var bytes: Int
    }

    let tests: [ReplayClient.Test]

    /// Both replays of `test`: the catalog's duration for each replay (45 s at most, the replay limit) and the
    /// traces' bytes in both directions. A confirmation run, when one follows, doubles it.
    static func cost(_ test: ReplayClient.Test) -> Cost {
        // The estimate every surface shares (`TestCost`): one published test, no confirmation run.
        let cost = TestCost.of(test, mode: .published(confirmation: false))
        return Cost(seconds: cost.seconds, bytes: cost.bytes)
    }

    /// The cost of the tests from `index` (0-based) to the end.
    func remaining(from index: Int) -> Cost {
        tests[min(index, tests.count)...].map(Self.cost).reduce(Cost(seconds: 0, bytes: 0)) {
            Cost(seconds: $0.seconds + $1.seconds, bytes: $0.bytes + $1.bytes)
        }
    }

    /// "test k of n: <name>; about 3 min and 120 MB for the 5 tests left" (only for two tests or more).
    func announce(_ index: Int, strings: Strings) -> String? {
        guard tests.count > 1, index < tests.count else { return nil }
        let left = remaining(from: index)
        return strings.testOfTests(
            index + 1, tests.count, tests[index].entry.name, minutes: Self.duration(left.seconds),
            data: Terminal.bytes(left.bytes), testsLeft: tests.count - index)
    }

    /// A duration as people say it: "40 s", "3 min".
    static func duration(_ seconds: Double) -> String {
        seconds < 90 ? "\(Int(seconds.rounded())) s" : "\(Int((seconds / 60).rounded())) min"
    }
}
