import WeheCore

/// Input checks shared by the analyses: a throughput series must have equal-length lists, finite non-negative
/// throughputs and finite non-decreasing times.
enum SeriesValidation {
    /// Returns `series` unchanged when it is well formed.
    /// - Parameter role: what the series is ("original", a file name), used in error messages.
    /// - Throws: `WeheAnalysisError` with code `.mismatchedLengths`, `.invalidSample` or `.invalidTimes`.
    static func validated(_ series: ThroughputSeries, role: String) throws(WeheAnalysisError) -> ThroughputSeries {
        guard series.mbps.count == series.times.count else {
            throw WeheAnalysisError(
                .mismatchedLengths,
                "\(role): \(series.mbps.count) throughput values but \(series.times.count) timestamps"
            )
        }
        try checkThroughputs(series.mbps, role: role)
        var previous = -Double.infinity
        for (index, time) in series.times.enumerated() {
            guard time.isFinite, time >= previous else {
                throw WeheAnalysisError(.invalidTimes, "\(role): time \(index) (\(time)) is not finite or decreases")
            }
            previous = time
        }
        return series
    }

    /// Checks that every value is a finite, non-negative throughput.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` naming the first offending sample.
    static func checkThroughputs(_ values: [Double], role: String) throws(WeheAnalysisError) {
        for (index, value) in values.enumerated() {
            guard value.isFinite else {
                throw WeheAnalysisError(.invalidSample, "\(role): sample \(index) is not a finite number")
            }
            guard value >= 0 else {
                throw WeheAnalysisError(.invalidSample, "\(role): sample \(index) is negative (\(value) Mbit/s)")
            }
        }
    }
}
