/// The result of the crowd-sourced analysis for one (provider, replay) group (analysis.md section 4.6 item 7).
public struct CrowdGroupReport: Sendable, Hashable, Codable {
    /// A detected throttling rate and the range of original-replay means attributed to it, Mbit/s.
    public struct Rate: Sendable, Hashable, Codable {
        /// The rate (a density peak of the original means), rounded to 0.01.
        public var rate: Double
        /// Lower end of the range, rounded to 0.01.
        public var lower: Double
        /// Upper end of the range, rounded to 0.01.
        public var upper: Double

        /// Creates a rate.
        public init(rate: Double, lower: Double, upper: Double) {
            self.rate = rate
            self.lower = lower
            self.upper = upper
        }
    }

    /// Provider name.
    public var provider: String
    /// Replay name.
    public var replay: String
    /// Tests in the group that were analysed.
    public var totalTests: Int
    /// Records rejected because their samples were malformed or empty.
    public var rejectedTests: Int
    /// Tests that are positive under the Bonferroni-corrected rule.
    public var positiveTests: Int
    /// Whether the group passed the size rule.
    public var analyzed: Bool
    /// KS p-value between the per-test original and control means, when the population step ran.
    public var populationKSPValue: Double?
    /// Jackknife ratio of the population step, when it ran.
    public var populationRatio: Double?
    /// Whether the populations differ; `nil` when the step did not run.
    public var populationDiffers: Bool?
    /// Density threshold of the all-test search, when it ran.
    public var densityThreshold: Double?
    /// Detected fixed throttling rates with their ranges.
    public var rates: [Rate]
    /// Positive tests whose original mean lies inside a detected range.
    public var truePositives: Int
    /// Why a step did not run, if so.
    public var note: String?

    /// Creates a report.
    public init(
        provider: String,
        replay: String,
        totalTests: Int,
        rejectedTests: Int,
        positiveTests: Int,
        analyzed: Bool,
        populationKSPValue: Double?,
        populationRatio: Double?,
        populationDiffers: Bool?,
        densityThreshold: Double?,
        rates: [Rate],
        truePositives: Int,
        note: String?
    ) {
        self.provider = provider
        self.replay = replay
        self.totalTests = totalTests
        self.rejectedTests = rejectedTests
        self.positiveTests = positiveTests
        self.analyzed = analyzed
        self.populationKSPValue = populationKSPValue
        self.populationRatio = populationRatio
        self.populationDiffers = populationDiffers
        self.densityThreshold = densityThreshold
        self.rates = rates
        self.truePositives = truePositives
        self.note = note
    }
}
