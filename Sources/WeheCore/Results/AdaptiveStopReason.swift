/// Why an adaptive verdict stopped asking for rounds.
public enum AdaptiveStopReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// The evidence against "the path treats the app and its control alike" passed the false-positive bound.
    case differentiation
    /// The slowdown's confidence interval lay inside the margin after the minimum of bytes per flow.
    case equivalence
    /// The cap on rounds or bytes was reached first: the verdict is inconclusive.
    case budget
    /// The cap on wall time was reached first: the verdict is inconclusive.
    case timeLimit = "time-limit"
    /// The short rounds were alike, but the long round (the whole trace, or 7 MB per flow) was not: a throttle (or
    /// priority) that starts later in a flow, which short rounds cannot see and one long round cannot test. The
    /// verdict is inconclusive rather than a "no differentiation" the short rounds alone would have given.
    case longRoundDiffers = "long-round-differs"
    /// Before spending more than one published test's bytes, the rounds so far varied so much that no verdict was
    /// forecast within the cap (cross traffic or a busy path moving each round): the run stops, inconclusive,
    /// rather than pay up to twice the bytes for rounds unlikely to decide.
    case noisyPath = "noisy-path"
}
