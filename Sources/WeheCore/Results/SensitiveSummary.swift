/// The sensitive verdict of a test, beside the published one: from several rounds of the original and
/// the control replay, each round's order chosen by a fair coin, an exact paired sign-flip test of "the app's
/// throughput differs from the control's", and the slowdown with its confidence interval.
///
/// `slowdown` is `1 − exp(mean ln(original/control))`: 0.18 means the app got 18 % less throughput than the control
/// (negative: the app was faster). The published verdict (`AnalysisSummary`) is unchanged beside it.
public struct SensitiveSummary: Sendable, Hashable, Codable {
    /// The verdict (same values as the published one; never `.blocked`).
    public var verdict: Verdict
    /// For `.differentiation`: throttled (app slower) or prioritized.
    public var direction: DifferentiationDirection?
    /// Rounds that entered the test (pairs with both replays measured).
    public var rounds: Int
    /// The exact p-value of "the app's throughput differs from the control's by more than the margin (5 %)": twice the
    /// smaller of the two one-sided sign-flip p-values, at most 1 (1 when the test could not run).
    public var pValue: Double
    /// The p-value below which the verdict is differentiation.
    public var alpha: Double
    /// Estimated slowdown of the app's traffic (fraction; negative when faster).
    public var slowdown: Double
    /// Lower bound of the slowdown's confidence interval (`-infinity` when unbounded).
    public var slowdownLower: Double
    /// Upper bound of the slowdown's confidence interval (`+infinity` when unbounded).
    public var slowdownUpper: Double
    /// The confidence level of the interval (0.95).
    public var confidenceLevel: Double
    /// The per-round mean throughputs, Mbit/s: original then control, one pair per round.
    public var originalMeansMbps: [Double]
    /// The control's per-round means.
    public var controlMeansMbps: [Double]
    /// Why the verdict is inconclusive, or a remark.
    public var note: String?
    /// Wall time of every round together (the published test included), seconds, when measured.
    public var durationSeconds: Double? = nil
    /// Bytes received over every round, when measured.
    public var bytesReceived: Int? = nil
    /// The change in time within the test, when the rounds' samples were analysed; `nil` in
    /// summaries stored before it existed (the JSON key is simply absent).
    public var changePoint: ChangePointSummary? = nil
    /// Why the adaptive verdict stopped; `nil` for the interleaved verdict (a fixed number of full rounds), so a
    /// summary with a stop reason is an adaptive one.
    public var stopReason: AdaptiveStopReason? = nil
    /// Every byte the rounds moved, both directions (the adaptive verdict's cost), when measured.
    public var bytesMoved: Int? = nil

    /// Creates a summary.
    public init(
        verdict: Verdict,
        direction: DifferentiationDirection?,
        rounds: Int,
        pValue: Double,
        alpha: Double,
        slowdown: Double,
        slowdownLower: Double,
        slowdownUpper: Double,
        confidenceLevel: Double,
        originalMeansMbps: [Double],
        controlMeansMbps: [Double],
        note: String? = nil
    ) {
        self.verdict = verdict
        self.direction = direction
        self.rounds = rounds
        self.pValue = pValue
        self.alpha = alpha
        self.slowdown = slowdown
        self.slowdownLower = slowdownLower
        self.slowdownUpper = slowdownUpper
        self.confidenceLevel = confidenceLevel
        self.originalMeansMbps = originalMeansMbps
        self.controlMeansMbps = controlMeansMbps
        self.note = note
    }

    /// "slowed by 18 % (95 % CI 12–24 %)", "faster by 5 % (95 % CI …)"; unbounded ends are written "…".
    public var effectText: String {
        func percent(_ value: Double) -> String {
            value.isFinite ? String(Int((value * 100).rounded())) : "…"
        }
        let level = Int((confidenceLevel * 100).rounded())
        if slowdown >= 0 {
            return
                "slowed by \(percent(slowdown)) % (\(level) % CI \(percent(slowdownLower))–\(percent(slowdownUpper)) %)"
        }
        return
            "faster by \(percent(-slowdown)) % (\(level) % CI \(percent(-slowdownUpper))–\(percent(-slowdownLower)) %)"
    }
}
