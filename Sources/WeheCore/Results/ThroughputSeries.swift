/// Throughput samples of one replay, as the client measures them (protocol.md section 8, analysis.md section 1).
///
/// `mbps[i]` is the throughput of interval `i` in megabits (10^6 bits) per second and `times[i]` the end of that
/// interval in seconds since the replay started. Both arrays always have the same length.
public struct ThroughputSeries: Sendable, Hashable, Codable {
    /// Throughput of each interval, Mbit/s.
    public var mbps: [Double]
    /// End time of each interval, seconds since replay start.
    public var times: [Double]

    /// Creates a series; `mbps` and `times` must have equal lengths (checked by `validated()`).
    public init(mbps: [Double], times: [Double]) {
        self.mbps = mbps
        self.times = times
    }

    /// Creates a series of evenly spaced samples `interval, 2·interval, …`.
    public init(mbps: [Double], interval: Double) {
        self.mbps = mbps
        self.times = mbps.indices.map { Double($0 + 1) * interval }
    }

    /// Number of samples.
    public var count: Int { mbps.count }

    /// Mean throughput (zeros included, as the current Wehe analysis does); `nil` for an empty series.
    public var meanMbps: Double? {
        guard !mbps.isEmpty else { return nil }
        return mbps.reduce(0, +) / Double(mbps.count)
    }

    /// The series without its last sample, as the server stores it (the last interval may be partial).
    public func droppingLastSample() -> ThroughputSeries {
        ThroughputSeries(mbps: Array(mbps.dropLast()), times: Array(times.dropLast()))
    }

    /// Checks the invariants that every consumer relies on.
    /// - Throws: `WeheCoreError` with code `.invalidSamples` when lengths differ, a value is not finite, a
    ///   throughput is negative or times decrease.
    public func validated() throws(WeheCoreError) -> ThroughputSeries {
        guard mbps.count == times.count else {
            throw WeheCoreError(
                .invalidSamples,
                "throughput and time lists differ in length (\(mbps.count) vs \(times.count))"
            )
        }
        for (index, value) in mbps.enumerated() {
            guard value.isFinite else {
                throw WeheCoreError(.invalidSamples, "sample \(index) is not a finite number")
            }
            guard value >= 0 else {
                throw WeheCoreError(.invalidSamples, "sample \(index) is negative (\(value) Mbit/s)")
            }
        }
        var previous = -Double.infinity
        for (index, time) in times.enumerated() {
            guard time.isFinite, time >= previous else {
                throw WeheCoreError(.invalidSamples, "time \(index) is not finite or decreases")
            }
            previous = time
        }
        return self
    }
}
