import Foundation
public import WeheCore
import WeheStatistics

/// Change in time within one test: throttling that starts or stops during the replay, found in
/// the rounds of an interleaved test.
///
/// 1. **Bytes, not time.** Per round, both replays' samples become the time each took for each of `K` equal byte bins
///    of the bytes both received (`ChangePointTest.binDurations`; `K = min(50, fewest samples of a replay)`), and
///    `x_{r,k} = ln(control's time / original's time)`. The original is compared with the control over the same
///    bytes of the same trace, never with its own other part, so TCP slow start and the end of the transfer, which
///    fall on the same bytes in both, cancel.
/// 2. **The split and its exact p-value.** `ChangePointTest` picks the split (both parts at least 10 % of the bins
///    and 5 bins) whose before-minus-after contrast is largest relative to its spread over the rounds, and computes
///    the exact sign-flip p-value of that maximum, the search over splits included. Under no differentiation it is
///    exact by the coin that ordered each round's replays: a false change is reported with probability at most
///    `alpha` (0.008, as the sensitive verdict; 8 rounds reach it: `2/2⁸`).
/// 3. **A margin, and one part unthrottled.** As the sensitive verdict, a change is reported only when the two parts'
///    app-to-control ratios (geometric means over the rounds) differ by more than `margin` (5 %), and when the less
///    slowed part is not itself differentiation (a throttle that starts or stops, not a constant cap whose effect
///    grows while TCP's slow start is below the cap). Extra conditions only lower the false-alarm rate.
/// 4. **Each part on its own.** The rounds' rates over each part's bytes go through `SensitiveAnalysis`: verdict,
///    slowdown and 95 % interval per part, leaving out the bins that share a sample interval with the change in any
///    replay (`blurredBins`: a sample that holds both sides of the change is one average rate). The change's
///    position is the split's byte edge, and its time the median over the rounds of the original replay's time at
///    that byte.
///
/// Fewer rounds than the test needs, or too few samples: not found, with a note (the position is still estimated
/// when it can be). One round cannot tell a throttle that stops from cross traffic that stops: it is never
/// enough.
public struct ChangePointAnalysis: Sendable {
    /// The false-alarm bound (0.008).
    public var alpha: Double
    /// The smallest difference between the two parts' ratios reported as a change (0.05).
    public var margin: Double
    /// The most byte bins per replay (50).
    public var maximumBins: Int
    /// The shortest part as a fraction of the bins (0.1) …
    public var minimumSegmentFraction: Double
    /// … and in bins (5).
    public var minimumSegmentBins: Int

    /// Creates the analysis.
    public init(
        alpha: Double = 0.008, margin: Double = 0.05, maximumBins: Int = 50, minimumSegmentFraction: Double = 0.1,
        minimumSegmentBins: Int = 5
    ) {
        self.alpha = alpha
        self.margin = margin
        self.maximumBins = maximumBins
        self.minimumSegmentFraction = minimumSegmentFraction
        self.minimumSegmentBins = minimumSegmentBins
    }

    /// The fewest rounds whose exact p-value can reach `alpha` (`2/2^R ≤ alpha`).
    public var minimumRounds: Int {
        var rounds = 1
        while 2 / Double(1 << rounds) > alpha, rounds < ChangePointTest.maximumRounds { rounds += 1 }
        return rounds
    }

    /// One round: the original's and the control's samples (the client's full series, the last partial sample
    /// included: its bytes count, and both replays' last samples end alike).
    public struct Round: Sendable {
        /// The original replay's samples.
        public var original: ThroughputSeries
        /// The control replay's samples.
        public var control: ThroughputSeries

        /// Creates a round.
        public init(original: ThroughputSeries, control: ThroughputSeries) {
            self.original = original
            self.control = control
        }
    }

    /// The change-point summary of `rounds` (rounds beyond `ChangePointTest.maximumRounds`, or without bytes in
    /// both replays, are left out).
    public func summary(rounds allRounds: [Round]) -> ChangePointSummary {
        let rounds = Array(
            allRounds.filter { Self.totalMegabytes($0.original) > 0 && Self.totalMegabytes($0.control) > 0 }
                .prefix(ChangePointTest.maximumRounds))
        func notTested(_ note: String, total: Double = 0, bins: Int = 0) -> ChangePointSummary {
            ChangePointSummary(
                found: false, kind: nil, pValue: 1, alpha: alpha, rounds: rounds.count, bins: bins, changeMegabytes: 0,
                changeSeconds: 0, totalMegabytes: total, before: nil, after: nil, note: note)
        }
        guard !rounds.isEmpty else { return notTested("no round with bytes in both replays") }
        let total = rounds.map { min(Self.totalMegabytes($0.original), Self.totalMegabytes($0.control)) }.min() ?? 0
        let fewestSamples = rounds.map { min($0.original.count, $0.control.count) }.min() ?? 0
        let bins = min(maximumBins, fewestSamples)
        let segment = ChangePointTest.minimumSegment(
            bins: bins, fraction: minimumSegmentFraction, atLeast: minimumSegmentBins)
        guard bins >= 2 * segment else {
            return notTested(
                "too few samples (\(fewestSamples)) to split a replay into two parts of \(segment) bins", total: total)
        }
        var ratios: [[Double]] = []
        var originalDurations: [[Double]] = []
        var controlDurations: [[Double]] = []
        for round in rounds {
            guard
                let original = ChangePointTest.binDurations(
                    mbps: round.original.mbps, times: round.original.times, megabytes: total, bins: bins),
                let control = ChangePointTest.binDurations(
                    mbps: round.control.mbps, times: round.control.times, megabytes: total, bins: bins),
                original.allSatisfy({ $0 > 0 }), control.allSatisfy({ $0 > 0 })
            else { return notTested("a replay's byte bins could not be timed", total: total, bins: bins) }
            originalDurations.append(original)
            controlDurations.append(control)
            ratios.append(zip(control, original).map { log($0 / $1) })
        }
        let result: ChangePointTest.Result
        do {
            result = try ChangePointTest.test(ratios, minimumSegment: segment)
        } catch {
            return notTested("the change-point test could not run: \(error)", total: total, bins: bins)
        }
        let split = result.split
        let changeMegabytes = total * Double(split) / Double(bins)
        // The part verdicts leave out the bins that share a sample with the change (see `blurredBins`).
        let blurred = Self.blurredBins(around: changeMegabytes, rounds: rounds, totalMegabytes: total, bins: bins)
        // `kept` is the part without the blurred bins; when nothing would be left, the whole part is judged.
        func part(_ range: Range<Int>, keeping unblurred: Range<Int>) -> ChangePointSummary.Segment {
            let kept = unblurred.isEmpty ? range : unblurred
            let megabytes = total * Double(kept.count) / Double(bins)
            let originalSeconds = originalDurations.map { $0[kept].reduce(0, +) }
            let controlSeconds = controlDurations.map { $0[kept].reduce(0, +) }
            let judged = SensitiveAnalysis(alpha: alpha, margin: margin).summary(
                originalMeans: originalSeconds.map { 8 * megabytes / $0 },
                controlMeans: controlSeconds.map { 8 * megabytes / $0 })
            return ChangePointSummary.Segment(
                startMegabytes: total * Double(range.lowerBound) / Double(bins),
                endMegabytes: total * Double(range.upperBound) / Double(bins),
                originalSeconds: Self.median(originalDurations.map { $0[range].reduce(0, +) }),
                verdict: judged.verdict, direction: judged.direction,
                pValue: judged.pValue, slowdown: judged.slowdown, slowdownLower: judged.slowdownLower,
                slowdownUpper: judged.slowdownUpper)
        }
        // `blurredBins` holds the split (lowerBound ≤ split ≤ upperBound), so both kept ranges are well formed.
        let before = part(0..<split, keeping: 0..<min(split, blurred.lowerBound))
        let after = part(split..<bins, keeping: max(split, blurred.upperBound)..<bins)
        let changeSeconds = Self.median(originalDurations.map { $0[0..<split].reduce(0, +) })
        let kind: ChangePointSummary.Kind = before.slowdown > after.slowdown ? .stops : .starts
        // ln of the ratio of the parts' app-to-control ratios (1 − slowdown each).
        let partsDiffer = abs(log((1 - before.slowdown) / (1 - after.slowdown))) > -log(1 - margin)
        // A change is between a throttled part and one treated like the control: a constant throttle whose effect
        // grows through TCP slow start (the cap binds only once the rate reaches it) is not "a throttle that starts".
        let otherIsDifferentiated = (kind == .stops ? after : before).verdict == .differentiation
        var note: String?
        if rounds.count < minimumRounds {
            note =
                "too few rounds (\(rounds.count)): the exact test needs \(minimumRounds) to reach p \(alpha); "
                + "run with --rounds \(minimumRounds) or more"
        } else if result.pValue <= alpha, !partsDiffer {
            note = "the parts differ by less than \(Int((margin * 100).rounded())) %"
        } else if result.pValue <= alpha, otherIsDifferentiated {
            note =
                "both parts differ from the control: a throttle throughout whose effect changes, not one that "
                + (kind == .stops ? "stops" : "starts")
        }
        return ChangePointSummary(
            found: rounds.count >= minimumRounds && result.pValue <= alpha && partsDiffer && !otherIsDifferentiated,
            kind: kind,
            pValue: result.pValue, alpha: alpha, rounds: rounds.count, bins: bins, changeMegabytes: changeMegabytes,
            changeSeconds: changeSeconds, totalMegabytes: total, before: before, after: after, note: note)
    }

    /// The byte bins that share a sample interval with the change at `megabytes` in some replay of some round.
    ///
    /// A sample is one rate over its interval, so inside it the bins are timed as if the bytes came evenly. In the
    /// sample where a throttle starts, the fast bytes before the change take that sample's average rate, slowed by
    /// the throttled ones after it, and the part before the change looks slower than it was (8 % when the first 3 MB
    /// crossed a 475 Mbit/s path in five 10-ms samples, in `ChangePointAnalysisTests`). The part verdicts are judged
    /// on the bins outside these, or on the whole part when every bin of it is among them (a part that crossed within
    /// one sample cannot be timed more finely). Both replays of every round count alike, so which bins are left out
    /// does not depend on which replay was the app's.
    static func blurredBins(
        around megabytes: Double, rounds: [Round], totalMegabytes: Double, bins: Int
    ) -> Range<Int> {
        let binMegabytes = totalMegabytes / Double(bins)
        guard bins > 0, binMegabytes > 0 else { return 0..<0 }
        let split = min(max(Int((megabytes / binMegabytes).rounded()), 0), bins)
        var first = split
        var last = split
        for round in rounds {
            for series in [round.original, round.control] {
                let cumulative = ChangePointTest.cumulativeMegabytes(mbps: series.mbps, times: series.times)
                guard let index = cumulative.firstIndex(where: { $0 >= megabytes }) else { continue }
                let start = index == 0 ? 0 : cumulative[index - 1]
                first = min(first, Int((start / binMegabytes).rounded(.down)))
                last = max(last, Int((cumulative[index] / binMegabytes).rounded(.up)))
            }
        }
        return max(first, 0)..<min(last, bins)
    }

    /// Megabytes a replay received (`ChangePointTest.cumulativeMegabytes`' last value).
    static func totalMegabytes(_ series: ThroughputSeries) -> Double {
        ChangePointTest.cumulativeMegabytes(mbps: series.mbps, times: series.times).last ?? 0
    }

    /// The median (mean of the two middle values for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
