/// Descriptive statistics of one replay's throughput list, as the reference stores them in its decision file:
/// `[max, min, mean, median, std]` with the population standard deviation (ddof 0). Zeros are included.
public struct ThroughputSummary: Sendable, Hashable, Codable {
    /// Largest sample, Mbit/s.
    public var max: Double
    /// Smallest sample, Mbit/s.
    public var min: Double
    /// Mean, Mbit/s.
    public var mean: Double
    /// Median, Mbit/s.
    public var median: Double
    /// Population standard deviation, Mbit/s.
    public var standardDeviation: Double
    /// Number of samples.
    public var count: Int

    /// Creates a summary.
    public init(max: Double, min: Double, mean: Double, median: Double, standardDeviation: Double, count: Int) {
        self.max = max
        self.min = min
        self.mean = mean
        self.median = median
        self.standardDeviation = standardDeviation
        self.count = count
    }
}
