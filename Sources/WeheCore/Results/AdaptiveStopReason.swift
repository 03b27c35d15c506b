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
}
