import WeheCore
import WeheReplay

/// What a test costs before it starts: the one estimate the command line, the dashboard's test grid, the consent text
/// and the docs all say, so that they never disagree.
///
/// The published test replays the original and the control once each: its bytes are both traces' bytes in both
/// directions as the client files give them (TCP requests and responses; for UDP, whose server datagrams the client
/// file does not list, twice the catalog's size of one replay), and its time both replays at their recorded pace,
/// each capped at the replay's time limit. A differentiation or an inconclusive verdict runs a confirmation test,
/// the same again, which `most` counts. The interleaved verdict runs `rounds` such tests; the adaptive verdict
/// usually costs one published test or less and stops at twice one (`AdaptivePlan`).
public struct TestCost: Sendable, Hashable {
    /// Bytes a run usually moves (no confirmation run; the adaptive verdict: one published test).
    public var bytes: Int
    /// Seconds a run usually takes.
    public var seconds: Double
    /// Bytes at most (with a confirmation run; the adaptive verdict's cap).
    public var mostBytes: Int
    /// Seconds at most.
    public var mostSeconds: Double

    /// Creates a cost.
    public init(bytes: Int, seconds: Double, mostBytes: Int, mostSeconds: Double) {
        self.bytes = bytes
        self.seconds = seconds
        self.mostBytes = mostBytes
        self.mostSeconds = mostSeconds
    }

    /// How the test is judged, for its cost.
    public enum Mode: Sendable, Hashable {
        /// The published test, with a confirmation run when `confirmation` and the verdict asks for one.
        case published(confirmation: Bool)
        /// The published test and `rounds − 1` more rounds.
        case interleaved(rounds: Int)
        /// Short rounds until the evidence suffices.
        case adaptive
    }

    /// The cost of `test` judged as `mode`.
    public static func of(_ test: ReplayClient.Test, mode: Mode = .published(confirmation: true)) -> TestCost {
        let once = publishedTest(test)
        switch mode {
        case .published(let confirmation):
            let runs = confirmation ? 2 : 1
            return TestCost(
                bytes: once.bytes, seconds: once.seconds, mostBytes: runs * once.bytes,
                mostSeconds: Double(runs) * once.seconds)
        case .interleaved(let rounds):
            let rounds = max(1, rounds)
            return TestCost(
                bytes: rounds * once.bytes, seconds: Double(rounds) * once.seconds,
                mostBytes: (rounds + 1) * once.bytes, mostSeconds: Double(rounds + 1) * once.seconds)
        case .adaptive:
            let plan = AdaptivePlan(test: test)
            return TestCost(
                bytes: plan.publishedBytes, seconds: once.seconds, mostBytes: plan.maximumBytes,
                mostSeconds: plan.timeLimitSeconds)
        }
    }

    /// The sum of several tests' costs.
    public static func total(_ costs: [TestCost]) -> TestCost {
        costs.reduce(TestCost(bytes: 0, seconds: 0, mostBytes: 0, mostSeconds: 0)) {
            TestCost(
                bytes: $0.bytes + $1.bytes, seconds: $0.seconds + $1.seconds, mostBytes: $0.mostBytes + $1.mostBytes,
                mostSeconds: $0.mostSeconds + $1.mostSeconds)
        }
    }

    /// One published test: both replays once.
    static func publishedTest(_ test: ReplayClient.Test) -> (bytes: Int, seconds: Double) {
        func bytes(_ trace: ReplayTrace) -> Int {
            if trace.transport == .udp, let size = test.entry.sizeMB, size.isFinite, size > 0 {
                return max(trace.bytesBothWays, Int(size * 1_000_000))
            }
            return trace.bytesBothWays
        }
        func seconds(_ trace: ReplayTrace) -> Double {
            let limit =
                trace.isPortTest
                ? ReplayEngineConfiguration.portTestDeadline
                : trace.transport == .udp
                    ? ReplayEngineConfiguration.udpAppDeadline : ReplayEngineConfiguration.tcpAppDeadline
            return min(max(test.entry.durationSeconds, 1), limit.inSeconds)
        }
        return (bytes(test.original) + bytes(test.control), seconds(test.original) + seconds(test.control))
    }
}
