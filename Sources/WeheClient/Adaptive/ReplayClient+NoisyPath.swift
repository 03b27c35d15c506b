/// When a run stops `noisy-path`: the rounds so far say the path moves the app's rate against its control's by
/// more than the remaining rounds could average out, so the run stops before it spends bytes that cannot buy a
/// verdict. Every stop keeps the rule's error bounds; these choices only decide which verdicts a noisy path costs.
extension ReplayClient {
    /// The short rounds a run has before the forecast may stop it: a forecast from fewer says little.
    static let fewestRoundsBeforeForecast = 4
    /// Whether the long round is held back (the run stops `noisy-path` instead): it would take the run past one
    /// published test's bytes, and of the short rounds so far (at least `fewestRoundsBeforeForecast`) two or more,
    /// and a fifth or more, differed from their control by more than the long round may (`differing`).
    ///
    /// Why a count and not the rounds' standard deviation: one stalled round on a calm path moves the deviation past
    /// 0.1 by itself (seen on the testbed: twelve rounds within ±7 % and one at +80 %), while cross traffic that
    /// comes and goes hits many rounds. On the kernel testbed (Deezer, 110 unthrottled runs side by side with other
    /// beds), every run that ended in "no differentiation" had at most 15 % of its rounds beyond ±10 %, every run
    /// under on/off cross traffic but one at least 18 %, and most under 1 % loss 22-56 %.
    static func holdsBackLongRound(differing: Int, rounds: Int, bytesAfterIt: Int, publishedBytes: Int) -> Bool {
        rounds >= fewestRoundsBeforeForecast && bytesAfterIt > publishedBytes && differing >= 2
            && 5 * differing >= rounds
    }
    /// How far the forecast looks, in multiples of the rounds the cap leaves. A forecast from the average growth
    /// of some twenty noisy rounds is pessimistic: in simulation (`AdaptiveAnalysisTests.
    /// forecastStopsNoisyRunsAtOnePublishedTest`) a horizon of exactly the rounds left lost up to 40 % of the
    /// detections a run to the cap would make under cross traffic, twice them up to 16 %, four times them at most
    /// 5.5 %, while still stopping at one published test's bytes every unthrottled run that would end at the cap
    /// under heavy cross traffic.
    static let forecastHorizonFactor = 4
}
