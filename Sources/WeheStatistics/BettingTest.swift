import Foundation

/// Testing by betting on paired log ratios under a symmetric null, and the confidence sequence for their shift:
/// anytime-valid, so a caller may look after every round and stop whenever it likes.
///
/// **Null.** Round `i` gives `dᵢ` (e.g. `ln(Oᵢ/Cᵢ)`, original against control over the same bytes). When the two
/// members of a round were put in two exchangeable slots by a fair coin and the path does not tell them apart, then
/// given everything before round `i` and given `|dᵢ|`, the sign of `dᵢ` is a fair coin. Hence for any function of
/// the magnitude, `E[sign(dᵢ)·g(|dᵢ|) | past] = 0`, whatever the cross traffic and however the path's rate drifts.
///
/// **Bet.** `xᵢ(δ) = clip((dᵢ − δ)/scale, −1, 1)`, a clipped magnitude, not the sign alone: a sign bet counts a
/// 0.1 % difference as much as a 50 % one, so a tiny systematic difference that no throttle causes would be
/// "significant" after a dozen concordant rounds; with the magnitude, evidence grows with the size of the effect in
/// units of `scale`, while the null stays exact (`xᵢ(0)` is `sign(dᵢ)·min(|dᵢ|/scale, 1)`).
///
/// **Wealth.** For the side "greater" (the shift is above δ) the wealth is the average over the fixed bets
/// `λₖ = (k − ½)/K`, k = 1…K, of `Πᵢ (1 + λₖ·xᵢ(δ))`; for "less" the same with `−xᵢ(δ)`. Each product is a
/// non-negative martingale with `W₀ = 1` when δ is the true shift (a supermartingale for every δ on the null's side
/// of it, since `xᵢ` falls as δ rises), so their average is too, and by Ville's inequality
/// `P(supₙ Wₙ ≥ 1/a) ≤ a` under the null: the test may stop at any round, for any reason, and keep its level.
/// Why a mixture of constant bets rather than a bet chosen online from the past rounds (aGRAPA, ONS): with fixed
/// bets every product falls monotonically as δ rises, so the confidence sequence is an interval found by bisection,
/// not a union of grid points; there is no warm-up or tuning; and the average loses against the best constant bet
/// in hindsight only a factor that grows like `√n` (the uniform mixture's regret). Its price: a run of rounds that
/// all agree needs `(1/K)·Σₖ(1 + λₖ)ⁿ ≥ 1/a`, 11 rounds at `a` = 0.005 (8 for the fixed-n sign-flip test at 0.008).
///
/// **Confidence sequence.** At level `1 − α` the shifts δ with `W_greater(δ) < 2/α` and `W_less(δ) < 2/α`: an
/// interval `[lower, upper]` that holds the true shift at every round at once with probability at least `1 − α`
/// (under the model that each `dᵢ` is the shift plus a conditionally symmetric term). Its bounds are exact up to the
/// bisection's 60 halvings; infinite while too few rounds can reach `2/α`.
///
/// Wealth is computed in logarithms (a log-sum-exp over the bets), so long runs neither overflow nor underflow.
/// `scripts/golden_sequential.py` recomputes wealth in exact rational arithmetic and the bounds with Brent's method.
public enum BettingTest {
    /// Which way the bettor wagers.
    public enum Side: Sendable, Hashable {
        /// That the shift is above δ (`dᵢ − δ` tends to be positive).
        case greater
        /// That the shift is below δ.
        case less
    }

    /// The number of fixed bets in the mixture (`λₖ = (k − ½)/K`).
    public static let defaultBetCount = 50

    /// The bets `λₖ = (k − ½)/count`, k = 1…count.
    public static func bets(count: Int = defaultBetCount) -> [Double] {
        (1...max(1, count)).map { (Double($0) - 0.5) / Double(max(1, count)) }
    }

    /// The bets spread evenly over `[lowest, 1)`: `λₖ = lowest + (1 − lowest)·(k − ½)/count`. A mixture that
    /// leaves out small stakes grows faster when the rounds mostly agree and loses faster when they do not; any
    /// fixed mixture is a test martingale, so the bound holds for every `lowest` in `[0, 1)`.
    public static func bets(count: Int = defaultBetCount, from lowest: Double) -> [Double] {
        let lowest = min(max(lowest, 0), 0.99)
        return bets(count: count).map { lowest + (1 - lowest) * $0 }
    }

    /// `xᵢ(δ) = clip((d − δ)/scale, −1, 1)`.
    @inlinable
    public static func clipped(_ difference: Double, shift: Double, scale: Double) -> Double {
        min(1, max(-1, (difference - shift) / scale))
    }

    /// The natural logarithm of the mixture wealth after `differences`, betting on `side` of `shift`.
    /// - Throws: `.nonFiniteValue` for a non-finite difference or shift, `.invalidArgument` for a scale that is not
    ///   positive or a bet outside [0, 1).
    public static func logWealth(
        _ differences: [Double], shift: Double = 0, scale: Double, side: Side, bets: [Double] = bets()
    ) throws(StatisticsError) -> Double {
        try Validation.requireFinite(differences, "differences")
        try validate(shift: shift, scale: scale, bets: bets)
        return unvalidatedLogWealth(differences, shift: shift, scale: scale, side: side, bets: bets)
    }

    /// A confidence sequence's interval for the shift.
    public struct Interval: Sendable, Hashable {
        /// The lower bound (`-infinity` while no shift can be rejected from below).
        public var lower: Double
        /// The upper bound (`+infinity` likewise).
        public var upper: Double

        /// Creates an interval.
        public init(lower: Double, upper: Double) {
            self.lower = lower
            self.upper = upper
        }
    }

    /// The `1 − alpha` confidence sequence's interval after `differences` (each side at `alpha/2`).
    /// - Throws: as `logWealth`, and `.invalidArgument` for `alpha` outside (0, 1).
    public static func confidenceInterval(
        _ differences: [Double], alpha: Double, scale: Double, bets: [Double] = bets()
    ) throws(StatisticsError) -> Interval {
        try Validation.requireFinite(differences, "differences")
        try validate(shift: 0, scale: scale, bets: bets)
        guard alpha > 0, alpha < 1 else {
            throw StatisticsError(.invalidArgument, "alpha \(alpha) is not in (0, 1)")
        }
        guard let low = differences.min(), let high = differences.max() else {
            return Interval(lower: -.infinity, upper: .infinity)
        }
        let threshold = log(2 / alpha)
        // Below `low − scale` every xᵢ is +1 (the greater side's wealth is at its largest); above `high + scale`
        // every xᵢ is −1. Between them each side's wealth is continuous and monotone in δ.
        let bottom = low - scale
        let top = high + scale
        func rejects(_ delta: Double, _ side: Side) -> Bool {
            unvalidatedLogWealth(differences, shift: delta, scale: scale, side: side, bets: bets) >= threshold
        }
        var lower = -Double.infinity
        if rejects(bottom, .greater) {
            var rejected = bottom
            var kept = top
            for _ in 0..<60 {
                let middle = rejected + (kept - rejected) / 2
                if middle <= rejected || middle >= kept { break }
                if rejects(middle, .greater) { rejected = middle } else { kept = middle }
            }
            lower = rejected
        }
        var upper = Double.infinity
        if rejects(top, .less) {
            var kept = bottom
            var rejected = top
            for _ in 0..<60 {
                let middle = kept + (rejected - kept) / 2
                if middle <= kept || middle >= rejected { break }
                if rejects(middle, .less) { rejected = middle } else { kept = middle }
            }
            upper = rejected
        }
        return Interval(lower: lower, upper: upper)
    }

    /// The fewest rounds, all at full stake on one side (`xᵢ = ±1`), whose wealth reaches `1/level`.
    public static func fewestRounds(level: Double, bets: [Double] = bets(), limit: Int = 1000) -> Int? {
        let threshold = log(1 / level)
        for rounds in 1...max(1, limit) {
            let all = [Double](repeating: 1, count: rounds)
            if unvalidatedLogWealth(all, shift: 0, scale: 1, side: .greater, bets: bets) >= threshold {
                return rounds
            }
        }
        return nil
    }

    static func validate(shift: Double, scale: Double, bets: [Double]) throws(StatisticsError) {
        guard shift.isFinite else { throw StatisticsError(.nonFiniteValue, "shift is not finite (\(shift))") }
        guard scale.isFinite, scale > 0 else {
            throw StatisticsError(.invalidArgument, "scale \(scale) is not a positive number")
        }
        guard !bets.isEmpty, bets.allSatisfy({ $0 >= 0 && $0 < 1 }) else {
            throw StatisticsError(.invalidArgument, "bets must be a non-empty list of numbers in [0, 1)")
        }
    }

    /// `ln((1/K)·Σₖ Πᵢ(1 + λₖ·σ·xᵢ))`, σ = +1 (greater) or −1 (less); inputs already checked.
    static func unvalidatedLogWealth(
        _ differences: [Double], shift: Double, scale: Double, side: Side, bets: [Double]
    ) -> Double {
        var wealth = Wealth(shift: shift, scale: scale, side: side, bets: bets)
        for difference in differences { wealth.add(difference) }
        return wealth.logWealth
    }

    /// One mixture wealth, updated round by round (O(K) per round): what a monitor that looks after every round
    /// keeps. Adding the same differences in the same order gives the same value as `logWealth`, bit for bit.
    public struct Wealth: Sendable, Hashable {
        /// The shift δ bet against.
        public let shift: Double
        /// The clipping scale.
        public let scale: Double
        /// The side bet on.
        public let side: Side
        /// The bets λₖ.
        public let bets: [Double]
        /// `Σᵢ ln(1 + λₖ·σ·xᵢ)` per bet.
        private var logs: [Double]
        /// The rounds bet on so far.
        public private(set) var count = 0

        /// A wealth of 1 before any round. Unchecked: `bets` in [0, 1), `scale` > 0 (see `logWealth`).
        public init(shift: Double, scale: Double, side: Side, bets: [Double] = BettingTest.bets()) {
            self.shift = shift
            self.scale = scale
            self.side = side
            self.bets = bets
            logs = [Double](repeating: 0, count: bets.count)
        }

        /// Bets on one more round's difference.
        public mutating func add(_ difference: Double) {
            let x = (side == .greater ? 1 : -1) * clipped(difference, shift: shift, scale: scale)
            for index in logs.indices { logs[index] += log1p(bets[index] * x) }
            count += 1
        }

        /// A forecast, not a test: the log mixture wealth after `more` rounds in which every constant bet keeps
        /// the average growth per round it had so far (`ln((1/K)·Σₖ exp(Lₖ·(n + more)/n))`, Lₖ its log product over
        /// the n rounds). A bet that has lost keeps losing, one that has won keeps winning at its rate, so the
        /// forecast reaches a threshold only when some constant bet has grown on the rounds so far.
        public func projectedLogWealth(afterMore more: Int) -> Double {
            guard count > 0, more > 0 else { return logWealth }
            let factor = Double(count + max(0, more)) / Double(count)
            let projected = logs.map { $0 * factor }
            guard let largest = projected.max(), largest > -.infinity else { return -.infinity }
            var sum = 0.0
            for value in projected { sum += exp(value - largest) }
            return largest + log(sum / Double(projected.count))
        }

        /// The natural logarithm of the mixture wealth (0 before any round).
        public var logWealth: Double {
            guard let largest = logs.max() else { return 0 }
            if largest == -.infinity { return -.infinity }
            var sum = 0.0
            for value in logs { sum += exp(value - largest) }
            return largest + log(sum / Double(logs.count))
        }
    }
}
