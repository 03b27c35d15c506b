import WeheCore

/// How many throughput samples an upload may carry: no more than the replay could have produced (protocol.md 8).
///
/// A client samples every `d = T/N` seconds from the replay's start until its sending phase ends (`N` = the grant's
/// `numSamples`, `T` = the app's duration capped at 45 s), and stamps the samples `d, 2d, …, k·d`. The server knows
/// `N` and, on its own clock, the window from the grant to the client's `DONE`, which contains the whole replay; the
/// upload names `d` (its last time over its count). So an honest upload has at most `window/d + 1` samples (the last
/// one is already dropped). Allowed:
///
/// * always `2·N` (200): the samples the grant asked for, with room; a client that reports a longer interval than it
///   sampled at stays within this;
/// * beyond that, `1.1 · window / d′ + 2`, where `d′ = max(1 ms, d − 0.5 ms)`: the Java client's timer runs at
///   `round(d·1000)` ms, at least 1 ms (our client also floors its interval at 1 ms); 10 % and two samples of slack
///   for timer and clock differences.
///
/// An upload of 20 000 samples needs a replay window of at least 18 s at a claimed 1 ms interval (200 s at the
/// 10 ms of a 1 s app), so the session caps and progress deadlines bound how many samples a network can make the
/// analysis read. Real tests stay far inside: about 100 samples from the published clients, about 560 (a 10 ms
/// interval over a 5.6 s window) from ours.
enum SampleBound {
    /// The smallest sampling interval any client uses: 1 ms.
    static let minimumInterval = 0.001
    /// How much shorter the Java timer's period can be than the stamped interval (rounding to whole ms).
    static let timerRounding = 0.0005
    /// Relative slack on the producible count.
    static let slack = 1.1

    /// The interval an upload declares: its last time over its number of samples (0 for an empty or odd series).
    static func declaredInterval(_ samples: ThroughputSeries) -> Double {
        guard let last = samples.times.last, samples.count > 0, last.isFinite, last > 0 else { return 0 }
        return last / Double(samples.count)
    }

    /// The samples an upload may always carry: twice what the grant asked for.
    static func floor(sampleCount: Int) -> Int { 2 * max(1, sampleCount) }

    /// The most samples an upload may carry after a replay window of `windowSeconds` at the declared `interval`,
    /// with `sampleCount` samples asked for in the grant.
    static func maximumSamples(sampleCount: Int, windowSeconds: Double, interval: Double) -> Int {
        let floor = floor(sampleCount: sampleCount)
        let period = max(minimumInterval, (interval.isFinite ? interval : 0) - timerRounding)
        let window = windowSeconds.isFinite ? max(0, windowSeconds) : 0
        let producible = (slack * window / period).rounded(.down) + 2
        guard producible < Double(Int.max / 2) else { return Int.max / 2 }
        return max(floor, Int(producible))
    }

    /// Throws unless `samples` could come from a replay of `windowSeconds` (the grant asked for `sampleCount`).
    /// - Throws: `ReplayServerError` `.protocolViolation` naming the count, the window, the interval and the bound.
    static func check(_ samples: ThroughputSeries, sampleCount: Int, windowSeconds: Double) throws(ReplayServerError) {
        let interval = declaredInterval(samples)
        let bound = maximumSamples(sampleCount: sampleCount, windowSeconds: windowSeconds, interval: interval)
        guard samples.count <= bound else {
            let window = (windowSeconds * 1000).rounded() / 1000
            let step = (interval * 1e6).rounded() / 1e6
            throw ReplayServerError(
                .protocolViolation,
                "throughput upload refused: \(samples.count) samples, but a replay of \(window) s sampled every "
                    + "\(step) s can produce at most \(bound)")
        }
    }
}
