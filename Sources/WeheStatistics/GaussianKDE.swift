import Foundation

/// A one-dimensional Gaussian kernel density estimate.
///
/// `f(x) = 1/(n·h·√(2π)) · Σ exp(−(x − xᵢ)²/(2h²))`, the form of analysis.md §4.6 step 2 (where h = 0.1 Mbit/s).
/// The bandwidth is either given or derived from the data by SciPy `gaussian_kde`'s rules, in which case the
/// estimate equals SciPy's.
public struct GaussianKDE: Sendable {
    /// SciPy's data-driven bandwidth rules: h = σ̂·factor with σ̂ the sample standard deviation (ddof 1).
    public enum BandwidthRule: Sendable, Hashable {
        /// Scott: factor = n^(−1/5) (SciPy's default).
        case scott
        /// Silverman: factor = (3n/4)^(−1/5).
        case silverman
    }

    /// The data points.
    public let samples: [Double]
    /// The kernel standard deviation h.
    public let bandwidth: Double

    /// An estimate with a fixed bandwidth.
    /// - Throws: `emptySample`, `nonFiniteValue`, or `invalidArgument` unless `bandwidth` is finite and positive.
    public init(samples: [Double], bandwidth: Double) throws(StatisticsError) {
        try Validation.requireFiniteNonEmpty(samples, "samples")
        guard bandwidth.isFinite, bandwidth > 0 else {
            throw StatisticsError(.invalidArgument, "bandwidth must be finite and positive, got \(bandwidth)")
        }
        self.samples = samples
        self.bandwidth = bandwidth
    }

    /// An estimate whose bandwidth follows `rule`.
    /// - Throws: as `bandwidth(for:rule:)`.
    public init(samples: [Double], rule: BandwidthRule) throws(StatisticsError) {
        try self.init(samples: samples, bandwidth: Self.bandwidth(for: samples, rule: rule))
    }

    /// The bandwidth `rule` gives for `samples`.
    /// - Throws: `emptySample`, `nonFiniteValue`, or `invalidArgument` for fewer than two samples or samples that
    ///   are all equal (SciPy fails on a singular covariance there too).
    public static func bandwidth(for samples: [Double], rule: BandwidthRule) throws(StatisticsError) -> Double {
        let deviation = try Descriptive.sampleStandardDeviation(samples)
        guard deviation > 0 else {
            throw StatisticsError(.invalidArgument, "a data-driven bandwidth needs samples that are not all equal")
        }
        let n = Double(samples.count)
        switch rule {
        case .scott: return deviation * pow(n, -0.2)
        case .silverman: return deviation * pow(n * 3 / 4, -0.2)
        }
    }

    /// The estimated density at `x` (0 at ±∞, NaN at NaN).
    public func density(at x: Double) -> Double {
        let scale = -0.5 / (bandwidth * bandwidth)
        var sum = 0.0
        for sample in samples {
            let distance = x - sample
            sum += exp(scale * distance * distance)
        }
        return sum / (Double(samples.count) * bandwidth * (2 * Double.pi).squareRoot())
    }

    /// The estimated density at every point of `xs`.
    public func densities(at xs: [Double]) -> [Double] {
        xs.map { density(at: $0) }
    }
}
