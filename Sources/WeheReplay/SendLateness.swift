/// How late sends were against their schedule: median, 99th percentile and maximum (nearest-rank percentiles).
public struct SendLateness: Sendable, Hashable {
    /// Number of sends measured.
    public var count: Int
    /// Median lateness.
    public var median: Duration
    /// 99th percentile.
    public var p99: Duration
    /// Largest lateness.
    public var maximum: Duration

    /// Creates a summary.
    public init(count: Int, median: Duration, p99: Duration, maximum: Duration) {
        self.count = count
        self.median = median
        self.p99 = p99
        self.maximum = maximum
    }

    /// Summarises measurements (negative values count as zero); an empty list gives zeros.
    public init(measurements: [Duration]) {
        let sorted = measurements.map { max($0, .zero) }.sorted()
        count = sorted.count
        guard !sorted.isEmpty else {
            median = .zero
            p99 = .zero
            maximum = .zero
            return
        }
        func rank(_ fraction: Double) -> Duration {
            let position = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(position, 0), sorted.count - 1)]
        }
        median = rank(0.5)
        p99 = rank(0.99)
        maximum = sorted[sorted.count - 1]
    }
}
