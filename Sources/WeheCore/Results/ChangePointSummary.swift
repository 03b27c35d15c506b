/// A change in time of the app's treatment within one test: throttling that starts or stops
/// during the replay, where (bytes of the original replay, seconds since its start), and each part judged on its own.
///
/// Computed from the rounds of an interleaved test (`ChangePointAnalysis` in WeheAnalysis): the original and the
/// control are compared over the same bytes of the trace, and the change is the split between two parts whose
/// app-versus-control ratios differ most, tested exactly against the coin that ordered each round's replays.
/// Stored inside the sensitive verdict (`SensitiveSummary.changePoint`); the published verdict is unchanged.
public struct ChangePointSummary: Sendable, Hashable, Codable {
    /// Whether the throttle starts (the later part is slower) or stops (the earlier part is slower).
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The app was treated like the control first, then slowed (or slowed more): "throttled after N MB".
        case starts
        /// The app was slowed first, then treated like the control (or slowed less): "the first N MB throttled".
        case stops
    }

    /// One part of the replay (before or after the change), judged on its own with the sensitive verdict's exact
    /// sign-flip test on the rounds' rates over that part's bytes. The part was chosen by the search, so its p-value
    /// is optimistic; the change's own `pValue` accounts for the search.
    public struct Segment: Sendable, Hashable, Codable {
        /// The part's first byte position, megabytes (10⁶ bytes) of the original replay.
        public var startMegabytes: Double
        /// The part's last byte position, megabytes.
        public var endMegabytes: Double
        /// The original replay's time over the part, seconds (median over the rounds).
        public var originalSeconds: Double
        /// The part's verdict (the sensitive rule: 5 % margin, α).
        public var verdict: Verdict
        /// For `.differentiation`: throttled or prioritized.
        public var direction: DifferentiationDirection?
        /// The part's exact p-value.
        public var pValue: Double
        /// The app's slowdown over the part (fraction; negative when faster).
        public var slowdown: Double
        /// The slowdown's confidence interval (`±infinity` when unbounded).
        public var slowdownLower: Double
        /// The upper end.
        public var slowdownUpper: Double

        /// Creates a part.
        public init(
            startMegabytes: Double, endMegabytes: Double, originalSeconds: Double, verdict: Verdict,
            direction: DifferentiationDirection?, pValue: Double, slowdown: Double, slowdownLower: Double,
            slowdownUpper: Double
        ) {
            self.startMegabytes = startMegabytes
            self.endMegabytes = endMegabytes
            self.originalSeconds = originalSeconds
            self.verdict = verdict
            self.direction = direction
            self.pValue = pValue
            self.slowdown = slowdown
            self.slowdownLower = slowdownLower
            self.slowdownUpper = slowdownUpper
        }

        /// "slowed by 55 % (95 % CI 50–60 %)", "faster by 3 % (…)".
        public var effectText: String {
            func percent(_ value: Double) -> String {
                value.isFinite ? String(Int((value * 100).rounded())) : "…"
            }
            if slowdown >= 0 {
                return
                    "slowed by \(percent(slowdown)) % (95 % CI \(percent(slowdownLower))–\(percent(slowdownUpper)) %)"
            }
            return "faster by \(percent(-slowdown)) % (95 % CI \(percent(-slowdownUpper))–\(percent(-slowdownLower)) %)"
        }
    }

    /// Whether a change was found: `pValue ≤ alpha`, enough rounds, and the two parts' ratios differ by more than
    /// the margin (5 %).
    public var found: Bool
    /// Which part is the slower one (set whenever the parts could be compared, found or not).
    public var kind: Kind?
    /// The exact p-value of "the app-versus-control ratio does not change during the replay" (1 when not tested).
    public var pValue: Double
    /// The level below which a change is reported (0.008).
    public var alpha: Double
    /// Rounds that entered the test.
    public var rounds: Int
    /// Byte bins per replay.
    public var bins: Int
    /// Bytes of the original replay before the change, megabytes (a bin edge).
    public var changeMegabytes: Double
    /// Time of the change in the original replay, seconds since its start (median over the rounds).
    public var changeSeconds: Double
    /// The bytes compared (the smallest replay's total), megabytes.
    public var totalMegabytes: Double
    /// The part before the change.
    public var before: Segment?
    /// The part after the change.
    public var after: Segment?
    /// Why no change could be tested, or a remark.
    public var note: String?

    /// Creates a summary.
    public init(
        found: Bool, kind: Kind?, pValue: Double, alpha: Double, rounds: Int, bins: Int, changeMegabytes: Double,
        changeSeconds: Double, totalMegabytes: Double, before: Segment?, after: Segment?, note: String? = nil
    ) {
        self.found = found
        self.kind = kind
        self.pValue = pValue
        self.alpha = alpha
        self.rounds = rounds
        self.bins = bins
        self.changeMegabytes = changeMegabytes
        self.changeSeconds = changeSeconds
        self.totalMegabytes = totalMegabytes
        self.before = before
        self.after = after
        self.note = note
    }

    /// The slower part (`before` when the throttle stops, `after` when it starts).
    public var throttledSegment: Segment? { kind == .stops ? before : after }

    /// The other part.
    public var otherSegment: Segment? { kind == .stops ? after : before }

    /// "throttle stops after the first 3.0 MB (0.52 s): the first 3.0 MB slowed by 48 % (95 % CI 45–50 %), the rest
    /// slowed by 1 % (…)"; `nil` without parts.
    public var effectText: String? {
        guard let before, let after, let kind else { return nil }
        let megabytes = Self.format(changeMegabytes, digits: 1)
        let seconds = Self.format(changeSeconds, digits: 2)
        switch kind {
        case .stops:
            return "throttle stops after the first \(megabytes) MB (\(seconds) s): the first \(megabytes) MB "
                + "\(before.effectText), the rest \(after.effectText)"
        case .starts:
            return "throttle starts after \(megabytes) MB (\(seconds) s): the first \(megabytes) MB "
                + "\(before.effectText), the rest \(after.effectText)"
        }
    }

    /// A number with `digits` decimals (no locale).
    static func format(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "…" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        let fraction = abs(scaled % Int(scale))
        guard digits > 0 else { return String(scaled) }
        let padded = String(fraction)
        let sign = scaled < 0 && whole == 0 ? "-" : ""
        return "\(sign)\(whole)." + String(repeating: "0", count: digits - padded.count) + padded
    }
}
