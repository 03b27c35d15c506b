import WeheAnalysis
import WeheCore

/// The rounds that confirm a long round that differed from its control while the short rounds were alike (a
/// throttle that starts later in a flow): whether a run starts them, and where they are cut.
extension ReplayClient {
    /// Whether a run whose first long round differed from its control goes on with long rounds only, to confirm
    /// the difference: when the fewest long rounds that could (`fewestRounds`, from
    /// `AdaptiveAnalysis.Monitor.fewestRoundsToDifferentiate`, each costing `perRound` bytes and `perRoundSeconds`)
    /// fit under both caps.
    /// Otherwise the run goes on as before (short rounds, which can still find a throttle that the short rounds
    /// reach, and a stop without a verdict once they would conclude "no differentiation").
    ///
    /// Why it is safe: the choice depends on the rounds so far alone, and every round keeps its coin, so the null
    /// stays exact. Why only then: confirming a throttle that starts after N bytes takes rounds that each pass N,
    /// and the rule needs about ten more of them after short rounds that showed nothing (`Docs/testbed.md`, "three
    /// floors"); starting them without room for that many spends bytes that cannot buy a verdict.
    static func confirmsLongRound(
        fewestRounds: Int?, perRound: Int, moved: Int, maximumBytes: Int, perRoundSeconds: Double = 0,
        elapsedSeconds: Double = 0, timeLimitSeconds: Double = .infinity
    ) -> Bool {
        guard let fewestRounds, fewestRounds > 0 else { return false }
        let (more, overflow) = fewestRounds.multipliedReportingOverflow(by: max(0, perRound))
        let seconds = elapsedSeconds + Double(fewestRounds) * max(0, perRoundSeconds)
        return !overflow && moved <= maximumBytes - more && seconds.isFinite && seconds <= timeLimitSeconds
    }

    /// The cut of the rounds that confirm a first long round that differed (the app `slower` than its control, or
    /// faster): half as far again as where that round's samples put the change (`ChangePointAnalysis` on the one
    /// round: the byte split that best separates a part like the control from a part that differs), so that a third
    /// of each round lies past it, at least the short round's cut and at most the floor round's. The floor round's
    /// cut when the round shows no such change: a later part not off its control by more than twice the margin the
    /// long round's way, a first part off by half as much or more (a throttle throughout, whose effect grows with the
    /// rate, or one that stops), or a UDP plan (cut in time). The first part is allowed some difference because it
    /// holds slow start, which two fresh connections cross at different speeds (on the kernel testbed the large
    /// port-80 test's first 0.3 MB came at 17-42 Mbit/s where its control's came at 38-71).
    ///
    /// Why: a throttle that starts after N bytes shows only in rounds that pass N, and a round cut far past N pays
    /// for bytes that add nothing; rounds of 1.5 N instead of 7 MB make the confirmation affordable for traces of a
    /// few times N (`Docs/testbed.md`, "three floors"). The cut depends on the rounds so far alone, so the coin's null
    /// is untouched, and a wrong estimate costs only bytes: rounds that stop short of N show nothing, and the run
    /// stops without a verdict once the rounds that could still confirm it no longer fit.
    static func confirmingCut(
        original: ThroughputSeries, control: ThroughputSeries, slower: Bool = true, plan: AdaptivePlan
    ) -> AdaptivePlan.Cut {
        guard case .bytes(let floor) = plan.floorRound, case .bytes(let short) = plan.shortRound else {
            return plan.floorRound
        }
        let change = ChangePointAnalysis().summary(rounds: [.init(original: original, control: control)])
        let margin = plan.rule.margin
        // The split's parts, whichever the analysis calls the throttled one: the first like the control, the later
        // off it the long round's way.
        guard change.changeMegabytes > 0, let before = change.before, let after = change.after else {
            return plan.floorRound
        }
        let sign = slower ? 1.0 : -1.0
        guard sign * after.slowdown > 2 * margin, sign * before.slowdown < sign * after.slowdown / 2 else {
            return plan.floorRound
        }
        let bytes = (change.changeMegabytes * 1.5 * 1_000_000).rounded(.up)
        guard bytes.isFinite, bytes < Double(floor) else { return plan.floorRound }
        return .bytes(max(short, Int(bytes)))
    }
}
