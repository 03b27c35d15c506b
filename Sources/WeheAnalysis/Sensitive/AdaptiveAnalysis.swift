import Foundation
public import WeheCore
import WeheStatistics

/// The adaptive verdict's stopping rule: after each short randomized round, stop for differentiation, for
/// equivalence, or at a budget, with a false-positive rate of at most `alpha` however often it looks.
///
/// **Rounds.** One original and one control replay (or the same prefix of both) in an order drawn by a fair coin.
/// Each round gives `dᵢ = ln((Oᵢ + ε)/(Cᵢ + ε))`, the two replays' rates **over the same bytes**
/// (`equalByteRates`: each replay's time to receive the first `B` bytes, `B` the smaller of the two replays'
/// totals), ε = 0.001 Mbit/s. The null's symmetry needs both slots to carry the same work: a control a few hundred
/// bytes shorter than its original (Skype's published control) finishes earlier and would look faster in every
/// round, a bias no margin should have to absorb.
///
/// **Test.** `BettingTest` on the `dᵢ` with clipped magnitudes (`clipScale`, 0.1 in log units: a round counts fully
/// from a 10 % difference on): two mixture wealths, one betting the app is slower, one faster, each against
/// `2/alpha`. Under no differentiation the coin makes each `dᵢ`'s sign fair given the past, so by Ville's
/// inequality the chance that either wealth ever reaches `2/alpha` is at most `alpha` (0.01): optional stopping,
/// the equivalence stop and the budget cannot raise it. The rule needs no margin for this: the margin only says
/// when the effect is small enough to call "no differentiation".
///
/// **Effect.** `slowdown = 1 − exp(mean dᵢ)` and the `1 − alpha` confidence sequence for the shift
/// (`BettingTest.confidenceInterval`), valid at every round at once, mapped to slowdowns.
///
/// **Stops**, checked in this order after every round:
/// 1. differentiation when a wealth at shift 0 passes `2/alpha` (the interval excludes 0): throttled when the app
///    was slower, prioritized when faster;
/// 2. equivalence (no differentiation) when the whole interval at level `equivalenceAlpha` lies inside
///    `(ln(1 − margin), ln(1 + margin))` (the wealths at those two shifts, betting inwards, both pass
///    `2/equivalenceAlpha`; no bisection needed) and
///    some round's flows carried at least `minimumBytesPerFlow` each (delayed throttling, reported after about 7 MB
///    of a flow, is invisible to shorter flows; the caller lowers the floor to the trace's size for shorter traces).
///    A wrong equivalence (the true slowdown outside the margin) has probability at most `equivalenceAlpha/2`.
///    That error is a missed throttle, not a false accusation, so its level may be looser than `alpha` (the client
///    uses 0.05: a miss at most 2.5 % of the time, within the 95 % detection asked of it) and it is reached in
///    fewer rounds (8 identical rounds instead of 11);
/// 3. budget when `maximumRounds` rounds or `maximumBytes` bytes are reached, time limit at `timeLimitSeconds`:
///    inconclusive, with the reason in the note.
/// Otherwise the caller runs another round.
public struct AdaptiveAnalysis: Sendable {
    /// One round's measurement.
    public struct Round: Sendable, Hashable {
        /// The original's rate over the compared bytes, Mbit/s.
        public var originalMbps: Double
        /// The control's rate over the same bytes, Mbit/s.
        public var controlMbps: Double
        /// The bytes compared in each replay (both flows carried at least these).
        public var comparedBytes: Int
        /// Every byte the round moved (both replays, both directions), for the budget.
        public var totalBytes: Int
        /// The round's wall time, seconds.
        public var durationSeconds: Double

        /// Creates a round.
        public init(
            originalMbps: Double, controlMbps: Double, comparedBytes: Int, totalBytes: Int, durationSeconds: Double
        ) {
            self.originalMbps = originalMbps
            self.controlMbps = controlMbps
            self.comparedBytes = comparedBytes
            self.totalBytes = totalBytes
            self.durationSeconds = durationSeconds
        }
    }

    /// The rule's answer after some rounds.
    public struct Decision: Sendable, Hashable {
        /// `nil` while the rule asks for another round.
        public var stopReason: AdaptiveStopReason?
        /// The verdict: differentiation, no differentiation, or inconclusive (also while running).
        public var verdict: Verdict
        /// For differentiation: throttled or prioritized.
        public var direction: DifferentiationDirection?
        /// Usable rounds (both replays measured).
        public var rounds: Int
        /// `1 − exp(mean dᵢ)` (0.18: the app got 18 % less than its control; negative when faster).
        public var slowdown: Double
        /// The confidence sequence's lower bound on the slowdown (`-infinity` while unbounded).
        public var slowdownLower: Double
        /// The upper bound (`+infinity` while unbounded).
        public var slowdownUpper: Double
        /// The bounds' confidence level: `1 − equivalenceAlpha` after an equivalence stop (the level that stop was
        /// decided at, so the interval shown is the one inside the margin), `1 − alpha` otherwise.
        public var confidenceLevel: Double
        /// The wealth betting that the app is slower (stop at `2/alpha`).
        public var wealthThrottled: Double
        /// The wealth betting that the app is faster.
        public var wealthPrioritized: Double
        /// Bytes of every round (both replays, both directions).
        public var bytes: Int
        /// Wall time of every round, seconds.
        public var durationSeconds: Double
        /// The most bytes a single flow carried in the comparison (the floor's measure).
        public var largestFlowBytes: Int
        /// Why it is inconclusive, or what it still waits for.
        public var note: String?
    }

    /// The false-positive bound (0.01).
    public var alpha: Double
    /// The level of the equivalence stop (`alpha` unless set): a wrong "no differentiation" has probability at most
    /// half of it.
    public var equivalenceAlpha: Double
    /// The slowdown (and speed-up) under which the effect is called no differentiation (0.05).
    public var margin: Double
    /// The clipping scale of the log ratios (0.1).
    public var clipScale: Double
    /// The floor of bytes one flow must have carried before an equivalence stop (7 MB).
    public var minimumBytesPerFlow: Int
    /// The cap on rounds (inconclusive beyond).
    public var maximumRounds: Int
    /// The cap on bytes of all rounds (inconclusive beyond).
    public var maximumBytes: Int
    /// The cap on wall time, seconds.
    public var timeLimitSeconds: Double
    /// The number of constant bets in the mixture (`BettingTest.bets(count:)`, 50).
    public var betCount: Int {
        didSet {
            bets = BettingTest.bets(count: betCount)
            equivalenceBets = BettingTest.bets(count: betCount, from: equivalenceLowestBet)
        }
    }
    /// The mixture's bets.
    var bets: [Double]
    /// The smallest stake of the equivalence wealths' mixture (0: the same mixture as the differentiation test). The
    /// client uses 0.5: when the rounds agree, as they do on a calm path without differentiation, the upper half of
    /// the stakes reaches the equivalence threshold one round sooner (7 identical rounds instead of 8 at level
    /// 0.05) and one or two sooner on noisier rounds; the differentiation test keeps the full mixture.
    public var equivalenceLowestBet: Double {
        didSet { equivalenceBets = BettingTest.bets(count: betCount, from: equivalenceLowestBet) }
    }
    /// The equivalence wealths' bets.
    var equivalenceBets: [Double]

    /// Creates the rule.
    public init(
        alpha: Double = 0.01, equivalenceAlpha: Double? = nil, margin: Double = 0.05, clipScale: Double = 0.1,
        minimumBytesPerFlow: Int = 7_000_000, maximumRounds: Int = 60, maximumBytes: Int = .max,
        timeLimitSeconds: Double = .infinity, betCount: Int = 50, equivalenceLowestBet: Double = 0
    ) {
        self.alpha = alpha
        self.equivalenceAlpha = equivalenceAlpha ?? alpha
        self.margin = margin
        self.clipScale = clipScale
        self.minimumBytesPerFlow = minimumBytesPerFlow
        self.maximumRounds = maximumRounds
        self.maximumBytes = maximumBytes
        self.timeLimitSeconds = timeLimitSeconds
        self.betCount = betCount
        bets = BettingTest.bets(count: betCount)
        self.equivalenceLowestBet = equivalenceLowestBet
        equivalenceBets = BettingTest.bets(count: betCount, from: equivalenceLowestBet)
    }

    /// ε of the log ratio, Mbit/s.
    public static let floorMbps = SensitiveAnalysis.floorMbps

    /// The fewest rounds that can stop for differentiation (all of them at full stake on one side).
    public var fewestRoundsForDifferentiation: Int? { BettingTest.fewestRounds(level: alpha / 2, bets: bets) }

    /// The round's log ratio `ln((O + ε)/(C + ε))`, or `nil` when the round carries no information (both rates
    /// zero, or a value that is negative or not finite).
    public static func logRatio(_ round: Round) -> Double? {
        let original = round.originalMbps
        let control = round.controlMbps
        guard original.isFinite, control.isFinite, original >= 0, control >= 0, original > 0 || control > 0 else {
            return nil
        }
        return log((original + floorMbps) / (control + floorMbps))
    }

    /// The decision after `rounds`, `elapsedSeconds` into the test (the rounds' own durations when `nil`).
    public func decide(_ rounds: [Round], elapsedSeconds: Double? = nil) -> Decision {
        var monitor = Monitor(self)
        for round in rounds { monitor.add(round) }
        return monitor.decision(elapsedSeconds: elapsedSeconds)
    }

    /// The rule applied round by round: `add` costs O(K) per round (four mixture wealths kept up to date), so a
    /// client can ask after every round; `decision` adds the confidence sequence's bounds (a bisection).
    public struct Monitor: Sendable {
        /// The rule.
        public let rule: AdaptiveAnalysis
        /// Every round added, usable or not.
        public private(set) var rounds: [Round] = []
        /// The usable rounds' log ratios.
        public private(set) var differences: [Double] = []
        /// Betting that the app is slower than its control (the shift is below 0).
        private var throttled: BettingTest.Wealth
        /// Betting that it is faster.
        private var prioritized: BettingTest.Wealth
        /// Betting that the shift is above `ln(1 − margin)` (rejects slowdowns of the margin or more).
        private var aboveLowerMargin: BettingTest.Wealth
        /// Betting that the shift is below `ln(1 + margin)`.
        private var belowUpperMargin: BettingTest.Wealth
        private var largestFlow = 0
        private var bytes = 0
        private var duration = 0.0

        /// A monitor before any round.
        public init(_ rule: AdaptiveAnalysis) {
            self.rule = rule
            throttled = .init(shift: 0, scale: rule.clipScale, side: .less, bets: rule.bets)
            prioritized = .init(shift: 0, scale: rule.clipScale, side: .greater, bets: rule.bets)
            aboveLowerMargin = .init(
                shift: log(1 - rule.margin), scale: rule.clipScale, side: .greater, bets: rule.equivalenceBets)
            belowUpperMargin = .init(
                shift: log(1 + rule.margin), scale: rule.clipScale, side: .less, bets: rule.equivalenceBets)
        }

        /// Adds a round; returns why to stop, or `nil` to run another round.
        @discardableResult
        public mutating func add(_ round: Round, elapsedSeconds: Double? = nil) -> AdaptiveStopReason? {
            rounds.append(round)
            bytes = bytes.addingReportingOverflow(max(0, round.totalBytes)).partialValue
            duration += round.durationSeconds.isFinite ? max(0, round.durationSeconds) : 0
            if let difference = AdaptiveAnalysis.logRatio(round) {
                differences.append(difference)
                largestFlow = max(largestFlow, round.comparedBytes)
                throttled.add(difference)
                prioritized.add(difference)
                aboveLowerMargin.add(difference)
                belowUpperMargin.add(difference)
            }
            return stop(elapsedSeconds: elapsedSeconds).reason
        }

        /// Whether one more round in which the app and its control are equally fast would stop the run for
        /// equivalence (and only then: no stop now). It depends on the rounds so far alone, so a client may choose
        /// the next round's kind by it without touching the coin's null.
        public var equivalenceNeedsOneAgreeingRound: Bool {
            guard stop().reason == nil else { return false }
            var next = self
            next.add(
                Round(originalMbps: 1, controlMbps: 1, comparedBytes: largestFlow, totalBytes: 0, durationSeconds: 0))
            return next.stop().reason == .equivalence
        }

        /// The fewest more rounds, each one way by far more than the clipping scale (the app `slower` than its
        /// control, or faster), after which the rule stops for differentiation that way; `nil` when no number up to
        /// `limit` does (or the rule has stopped for it already). It depends on the rounds so far alone, so a client
        /// may choose its next rounds by it without touching the coin's null.
        ///
        /// What a client asks before it buys rounds to confirm one long round that differed: this is the best case,
        /// so when even it would pass the cap, no such rounds can buy a verdict.
        public func fewestRoundsToDifferentiate(slower: Bool, within limit: Int) -> Int? {
            guard stop().reason != .differentiation, limit > 0 else { return nil }
            var next = self
            // Ten clipping scales: every bet counts the round fully, and the rates stay far above the floor.
            let control = 100 * (AdaptiveAnalysis.floorMbps + 1)
            let original = control * exp((slower ? -10 : 10) * rule.clipScale)
            for more in 1...limit {
                next.add(
                    Round(
                        originalMbps: original, controlMbps: control, comparedBytes: largestFlow, totalBytes: 0,
                        durationSeconds: 0))
                let outcome = next.stop()
                if outcome.reason == .differentiation {
                    return outcome.direction == (slower ? .throttled : .prioritized) ? more : nil
                }
            }
            return nil
        }

        /// A forecast of how many more rounds like the ones so far the rule needs to decide: the fewest `m` ≤
        /// `limit` after which, if every constant bet kept its average growth per round
        /// (`BettingTest.Wealth.projectedLogWealth`), a differentiation wealth would pass 2/α or both margin
        /// wealths 2/α of the equivalence level; `nil` when no `m` up to `limit` does (or the rule has stopped).
        ///
        /// Not a test and not part of the rule: the client asks it before spending past one published test's
        /// bytes, to stop instead of paying for rounds that are unlikely to buy a verdict (a path whose cross
        /// traffic moves every round). Stopping there is safe for the error bounds, which hold whenever the client
        /// stops; what it costs is the verdicts that would have come later against the forecast.
        public func forecastRoundsToDecide(within limit: Int) -> Int? {
            guard stop().reason == nil, limit > 0, !differences.isEmpty else { return nil }
            let threshold = log(2 / rule.alpha)
            let equivalenceThreshold = log(2 / rule.equivalenceAlpha)
            for more in 1...limit {
                if throttled.projectedLogWealth(afterMore: more) >= threshold
                    || prioritized.projectedLogWealth(afterMore: more) >= threshold
                {
                    return more
                }
                if aboveLowerMargin.projectedLogWealth(afterMore: more) >= equivalenceThreshold
                    && belowUpperMargin.projectedLogWealth(afterMore: more) >= equivalenceThreshold
                {
                    return more
                }
            }
            return nil
        }

        /// The rounds' spread: the sample standard deviation of the log ratios (0.1: the app's rate against its
        /// control's moved by about ±10 % from round to round). 0 before two rounds.
        public var roundSpread: Double {
            guard differences.count >= 2 else { return 0 }
            let mean = differences.reduce(0, +) / Double(differences.count)
            let variance =
                differences.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(differences.count - 1)
            return variance.squareRoot()
        }

        /// How many rounds so far differ from their control by more than `fraction` either way
        /// (`|dᵢ| > ln(1 + fraction)`).
        public func roundsDiffering(byMoreThan fraction: Double) -> Int {
            let bound = log(1 + fraction)
            return differences.count { abs($0) > bound }
        }

        /// The rounds' spread as a percentage of the control's rate (for the note of a run stopped by the
        /// forecast). 0 before two rounds.
        public var roundSpreadPercent: Int { Int(((exp(roundSpread) - 1) * 100).rounded()) }

        /// The stop, its verdict and note, from the four wealths (no interval: O(K)).
        public func stop(elapsedSeconds: Double? = nil) -> (
            reason: AdaptiveStopReason?, verdict: Verdict, direction: DifferentiationDirection?, note: String?
        ) {
            let threshold = log(2 / rule.alpha)
            let slower = throttled.logWealth
            let faster = prioritized.logWealth
            if slower >= threshold || faster >= threshold {
                return (.differentiation, .differentiation, slower >= faster ? .throttled : .prioritized, nil)
            }
            let equivalenceThreshold = log(2 / rule.equivalenceAlpha)
            let inside =
                aboveLowerMargin.logWealth >= equivalenceThreshold && belowUpperMargin.logWealth >= equivalenceThreshold
            if inside && largestFlow >= rule.minimumBytesPerFlow {
                return (.equivalence, .noDifferentiation, nil, nil)
            }
            let margin = AdaptiveAnalysis.percent(rule.margin)
            let waiting =
                inside
                ? "the slowdown is inside ±\(margin) but no flow has carried \(rule.minimumBytesPerFlow) bytes yet "
                    + "(\(largestFlow))"
                : "the slowdown's interval is not yet inside ±\(margin) nor clear of 0"
            if rounds.count >= rule.maximumRounds || bytes >= rule.maximumBytes {
                let cap =
                    rounds.count >= rule.maximumRounds
                    ? "\(rule.maximumRounds) rounds" : "\(bytes) bytes (cap \(rule.maximumBytes))"
                return (.budget, .inconclusive, nil, "budget reached at \(cap): \(waiting)")
            }
            let elapsed = elapsedSeconds ?? duration
            if elapsed >= rule.timeLimitSeconds {
                return (
                    .timeLimit, .inconclusive, nil,
                    "time limit reached after \(AdaptiveAnalysis.seconds(elapsed)) s: \(waiting)"
                )
            }
            return (nil, .inconclusive, nil, waiting)
        }

        /// The full decision: the stop, the slowdown and its confidence sequence's bounds.
        public func decision(elapsedSeconds: Double? = nil) -> Decision {
            let outcome = stop(elapsedSeconds: elapsedSeconds)
            let mean = differences.isEmpty ? 0 : differences.reduce(0, +) / Double(differences.count)
            let isEquivalence = outcome.reason == .equivalence
            let level = isEquivalence ? rule.equivalenceAlpha : rule.alpha
            let interval =
                (try? BettingTest.confidenceInterval(
                    differences, alpha: level, scale: rule.clipScale,
                    bets: isEquivalence ? rule.equivalenceBets : rule.bets))
                ?? BettingTest.Interval(lower: -.infinity, upper: .infinity)
            return Decision(
                stopReason: outcome.reason, verdict: outcome.verdict, direction: outcome.direction,
                rounds: differences.count, slowdown: 1 - exp(mean), slowdownLower: 1 - exp(interval.upper),
                slowdownUpper: 1 - exp(interval.lower), confidenceLevel: 1 - level,
                wealthThrottled: exp(throttled.logWealth),
                wealthPrioritized: exp(prioritized.logWealth), bytes: bytes, durationSeconds: duration,
                largestFlowBytes: largestFlow, note: outcome.note)
        }
    }

    /// The two replays' rates over the same bytes, from their throughput samples (Mbit/s at the end of each
    /// interval, `times` in seconds from the replay's start): `B` = the smaller of the two totals, each rate
    /// `8·B / time to receive B`. `nil` when either replay received nothing.
    ///
    /// `lastArrivals` (seconds from each replay's start, when known) end the interval that holds a replay's last
    /// bytes at their arrival instead of at the interval's end. The samples place bytes only within an interval, and
    /// the time to receive `B` is interpolated inside it as if they came evenly; for the replay whose total is `B`
    /// that counted the last interval as full. A round that crosses a fast path within a few intervals then took
    /// rates in steps of a whole interval: a port test's short rounds on the kernel testbed came out at two values
    /// only, 4:3 apart (three intervals or four). With the instant, the replay that received `B` is timed to its
    /// last byte, and the other one is interpolated within a shorter last interval when `B` falls there.
    public static func equalByteRates(
        original: (mbps: [Double], times: [Double]), control: (mbps: [Double], times: [Double]),
        lastArrivals: (original: Double?, control: Double?) = (nil, nil)
    ) -> (originalMbps: Double, controlMbps: Double, comparedBytes: Int)? {
        let originalCumulative = ChangePointTest.cumulativeMegabytes(mbps: original.mbps, times: original.times)
        let controlCumulative = ChangePointTest.cumulativeMegabytes(mbps: control.mbps, times: control.times)
        guard let originalTotal = originalCumulative.last, let controlTotal = controlCumulative.last else {
            return nil
        }
        let megabytes = min(originalTotal, controlTotal)
        guard megabytes > 0,
            let originalTime = ChangePointTest.deliveryTime(
                of: megabytes, cumulative: originalCumulative,
                times: endingLastInterval(original.times, cumulative: originalCumulative, at: lastArrivals.original)),
            let controlTime = ChangePointTest.deliveryTime(
                of: megabytes, cumulative: controlCumulative,
                times: endingLastInterval(control.times, cumulative: controlCumulative, at: lastArrivals.control)),
            originalTime > 0, controlTime > 0
        else { return nil }
        return (8 * megabytes / originalTime, 8 * megabytes / controlTime, Int((megabytes * 1e6).rounded()))
    }

    /// `times` with the end of the last interval that received bytes moved back to `lastArrival`, when the instant
    /// lies inside that interval (it always does for a meter's own samples; anything else leaves `times` as they
    /// are).
    static func endingLastInterval(_ times: [Double], cumulative: [Double], at lastArrival: Double?) -> [Double] {
        guard let lastArrival, lastArrival.isFinite,
            let last = cumulative.indices.last(where: { cumulative[$0] > ($0 == 0 ? 0 : cumulative[$0 - 1]) })
        else { return times }
        let start = last == 0 ? 0 : times[last - 1]
        guard lastArrival > start, lastArrival <= times[last] else { return times }
        var adjusted = times
        adjusted[last] = lastArrival
        return adjusted
    }

    static func percent(_ fraction: Double) -> String { "\(Int((fraction * 100).rounded())) %" }
    static func seconds(_ value: Double) -> String { String(format: "%.1f", value) }
}
