public import WeheCore

/// How the engine replays one trace (protocol.md sections 6.1, 7.1 and 8; analysis.md section 1.2).
public struct ReplayEngineConfiguration: Sendable, Hashable {
    /// Send each payload no earlier than its recorded time (app tests); `false` sends as fast as responses allow
    /// (port tests).
    public var timing: Bool
    /// No packet is started after this time from the replay start; a read in progress is cut there (45 s TCP app,
    /// 40 s UDP app, 30 s port tests).
    public var deadline: Duration
    /// The sample interval Δ.
    public var sampleInterval: Duration
    /// Longest silence while a response is awaited before the server counts as not answering (30 s, the Java
    /// client's read timeout).
    public var idleTimeout: Duration
    /// A server that closes early is accepted when fewer than this many response bytes are missing (100).
    public var missingBytesTolerance: Int
    /// How long before a scheduled send the engine stops sleeping and yields until the exact time (reduces timer
    /// overshoot on real clocks; must stay zero with a manual clock, which does not advance while yielding).
    public var spinWindow: Duration

    /// Creates a configuration.
    public init(
        timing: Bool,
        deadline: Duration,
        sampleInterval: Duration,
        idleTimeout: Duration = .seconds(30),
        missingBytesTolerance: Int = 100,
        spinWindow: Duration = .zero
    ) {
        self.timing = timing
        self.deadline = deadline
        self.sampleInterval = sampleInterval
        self.idleTimeout = idleTimeout
        self.missingBytesTolerance = missingBytesTolerance
        self.spinWindow = spinWindow
    }

    /// Deadline of TCP app replays (45 s).
    public static let tcpAppDeadline: Duration = .seconds(45)
    /// Deadline of UDP app replays (40 s).
    public static let udpAppDeadline: Duration = .seconds(40)
    /// Deadline of port tests (30 s).
    public static let portTestDeadline: Duration = .seconds(30)

    /// The published clients' settings for a trace: timing on except for port tests, the deadline of its kind, and
    /// `Δ = min(appDuration, deadline) / sampleCount`, at least 1 ms.
    /// - Parameters:
    ///   - trace: the trace to replay.
    ///   - appDuration: the catalog's `time` for one replay, seconds (the trace's own duration when unknown).
    ///   - sampleCount: `numSamples` from the server's grant (100).
    public static func standard(for trace: ReplayTrace, appDuration: Double?, sampleCount: Int) -> Self {
        let deadline: Duration =
            trace.isPortTest ? portTestDeadline : (trace.transport == .udp ? udpAppDeadline : tcpAppDeadline)
        var nominal = appDuration ?? trace.duration
        if !nominal.isFinite || nominal <= 0 { nominal = max(trace.duration, 1) }
        let capped = min(nominal, deadline.inSeconds)
        let interval = Duration.nanoseconds(Int64((capped / Double(max(1, sampleCount)) * 1e9).rounded()))
        return Self(
            timing: !trace.isPortTest,
            deadline: deadline,
            // At least 1 ms, as the published Java client's millisecond timer: a trace recorded in an instant (the
            // small test fixtures) would otherwise be sampled every few microseconds, which no client does and a
            // server bounds (an upload may not carry more samples than its window allows at 1 ms).
            sampleInterval: max(interval, .milliseconds(1))
        )
    }
}
