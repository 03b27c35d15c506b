/// The outcome of one differentiation test, as shown to a person (analysis.md section 2.4).
public enum Verdict: String, Sendable, Hashable, Codable, CaseIterable {
    /// The original and control replays differ in throughput and distribution.
    case differentiation
    /// No differentiation detected.
    case noDifferentiation = "no-differentiation"
    /// The throughputs differ but the distributions do not clearly differ; a confirmation run is advised.
    case inconclusive
    /// The tested port could not be reached at all (port tests only).
    case blocked
}

/// Which way a differentiation goes.
public enum DifferentiationDirection: String, Sendable, Hashable, Codable {
    /// The original (app) replay was slower than the control: the app is throttled.
    case throttled
    /// The original (app) replay was faster than the control: the app is prioritized.
    case prioritized
}

/// The verdict of a WeHeY localization run (analysis.md section 6.5).
public enum LocalizationVerdict: String, Sendable, Hashable, Codable, CaseIterable {
    /// The differentiation happens in the client's access network (the shared part of the Y).
    case accessNetwork = "access-network"
    /// No evidence that the differentiation is in the client's access network.
    case noEvidence = "no-evidence"
    /// Not enough data to decide.
    case inconclusive
}
