public import WeheCore
public import WeheReplay

/// Progress of a running test, delivered to the handler given to `ReplayClient.run`.
public enum ReplayClientEvent: Sendable {
    /// A test (or its confirmation) starts with this history count.
    case testStarted(test: String, historyCount: Int, isConfirmation: Bool)
    /// One replay of the test starts (`position` 1 or 2).
    case replayStarted(test: String, role: ReplayRole, replayName: String, position: Int)
    /// About once per sample interval while a replay runs.
    case replayProgress(test: String, role: ReplayRole, progress: ReplayProgress)
    /// A replay finished and its samples were accepted by the server.
    case replayFinished(test: String, role: ReplayRole, outcome: ReplayOutcome)
    /// The tested port could not be reached (port tests).
    case portBlocked(test: String, port: Int)
    /// The analysis was requested; results are being polled.
    case analysisRequested(test: String, historyCount: Int)
    /// The first run found differentiation, a blocked port or an inconclusive result; a confirmation run (a complete
    /// new test) follows, and its verdict replaces the first. `first` holds the first run's numbers and verdict.
    case confirmationScheduled(test: String, firstVerdict: Verdict, first: AnalysisSummary)
    /// The test is complete (after its confirmation, if any).
    case testFinished(TestResult)
    /// An adaptive verdict's round ended: what the rule says after it, and what the rounds have cost so far.
    case roundFinished(test: String, round: AdaptiveRoundProgress)
    /// An interleaved run's further round starts: `round` of `rounds`, the published test being round 1.
    case roundStarted(test: String, round: Int, rounds: Int)
}

/// Where an adaptive verdict stands after a round.
public struct AdaptiveRoundProgress: Sendable, Hashable {
    /// The round's number, from 1.
    public var round: Int
    /// Whether it was the floor round (the long one taken before concluding no differentiation).
    public var isFloorRound: Bool
    /// Bytes every round so far moved, both replays, both directions.
    public var bytesMoved: Int
    /// The cap on bytes; past it the verdict is inconclusive.
    public var maximumBytes: Int
    /// The slowdown estimated so far (0.18: the app got 18 % less than its control).
    public var slowdown: Double
    /// In plain words: what the rule waits for, or why it stops.
    public var status: String

    /// Creates a progress report.
    public init(
        round: Int, isFloorRound: Bool, bytesMoved: Int, maximumBytes: Int, slowdown: Double, status: String
    ) {
        self.round = round
        self.isFloorRound = isFloorRound
        self.bytesMoved = bytesMoved
        self.maximumBytes = maximumBytes
        self.slowdown = slowdown
        self.status = status
    }
}
