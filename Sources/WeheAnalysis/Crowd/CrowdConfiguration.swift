/// Settings of the crowd-sourced analysis (analysis.md sections 4.2-4.6). Defaults are the reference's.
public struct CrowdConfiguration: Sendable, Hashable, Codable {
    /// A group is analysed unless it has fewer than this many tests (100) …
    public var minimumGroupTests: Int
    /// … and fewer than this many positive tests (10).
    public var minimumGroupPositives: Int
    /// Family-wise significance level split over the group's tests (Bonferroni: each test needs p < 0.05/N).
    public var familywiseAlpha: Double
    /// A positive test needs `|(m_R − m_O) / min(max O, max R)|` above this (0.1).
    public var differenceThreshold: Double
    /// A positive test, and a differing population, need a jackknife ratio above this (0.95).
    public var ratioThreshold: Double
    /// Jackknife rounds (100), subset fraction (0.5) and p-value split (0.05), as in the per-test analysis.
    public var jackknifeRounds: Int
    /// See `jackknifeRounds`.
    public var jackknifeFraction: Double
    /// See `jackknifeRounds`.
    public var jackknifePThreshold: Double
    /// The population step needs more than this many positive tests (10).
    public var populationMinimumPositives: Int
    /// The populations differ when their KS p-value is below this (0.05) and the ratio is above `ratioThreshold`.
    public var populationPThreshold: Double
    /// Settings of the kernel-density search.
    public var search: FixedRateSearch.Configuration

    /// Creates a configuration with the reference defaults.
    public init(
        minimumGroupTests: Int = 100,
        minimumGroupPositives: Int = 10,
        familywiseAlpha: Double = 0.05,
        differenceThreshold: Double = 0.1,
        ratioThreshold: Double = 0.95,
        jackknifeRounds: Int = 100,
        jackknifeFraction: Double = 0.5,
        jackknifePThreshold: Double = 0.05,
        populationMinimumPositives: Int = 10,
        populationPThreshold: Double = 0.05,
        search: FixedRateSearch.Configuration = FixedRateSearch.Configuration()
    ) {
        self.minimumGroupTests = minimumGroupTests
        self.minimumGroupPositives = minimumGroupPositives
        self.familywiseAlpha = familywiseAlpha
        self.differenceThreshold = differenceThreshold
        self.ratioThreshold = ratioThreshold
        self.jackknifeRounds = jackknifeRounds
        self.jackknifeFraction = jackknifeFraction
        self.jackknifePThreshold = jackknifePThreshold
        self.populationMinimumPositives = populationMinimumPositives
        self.populationPThreshold = populationPThreshold
        self.search = search
    }

    /// Checks every value.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending value.
    public func validated() throws(WeheAnalysisError) -> CrowdConfiguration {
        let fractions = [
            ("family-wise alpha", familywiseAlpha), ("ratio threshold", ratioThreshold),
            ("jackknife fraction", jackknifeFraction), ("jackknife p threshold", jackknifePThreshold),
            ("population p threshold", populationPThreshold),
        ]
        for (name, value) in fractions where !(value.isFinite && value > 0 && value <= 1) {
            throw WeheAnalysisError(.invalidConfiguration, "\(name) must lie in (0, 1], got \(value)")
        }
        guard differenceThreshold.isFinite, differenceThreshold >= 0 else {
            throw WeheAnalysisError(.invalidConfiguration, "difference threshold must be ≥ 0")
        }
        guard jackknifeRounds >= 1, jackknifeRounds <= 100_000, minimumGroupTests >= 0, minimumGroupPositives >= 0,
            populationMinimumPositives >= 0
        else {
            throw WeheAnalysisError(.invalidConfiguration, "counts must be non-negative and rounds in 1...100000")
        }
        _ = try search.validated()
        return self
    }
}
