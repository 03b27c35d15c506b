/// The mean throughput of a replay as results show it: `nil` when the replay was not measured (it has no sample),
/// so that a replay that never ran or was never timed is not read as one that moved nothing ("0.0 Mbit/s" reads as
/// blocked). A blocked port keeps the 0 the analysis gives its original replay: there, 0 is what was found.
public enum MeasuredMean {
    /// - Parameters:
    ///   - mean: the mean the analysis (or the samples) gave, Mbit/s; `nil` when none.
    ///   - samples: how many throughput samples the replay has; `nil` when the replay is not stored at all.
    ///   - verdict: the test's verdict, if analysed.
    public static func value(_ mean: Double?, samples: Int?, verdict: Verdict?) -> Double? {
        if verdict == .blocked { return mean }
        guard let samples, samples > 0 else { return nil }
        return mean
    }
}
