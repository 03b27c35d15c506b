public import Foundation
public import WeheCore
public import WeheReplay

/// The outcome of one complete test (after its confirmation run, if there was one).
public struct TestResult: Sendable {
    /// The catalog id (`youtube`, `port853s`).
    public var test: String
    /// Display name.
    public var name: String
    /// Name of the original replay (`Youtube-02202024`, `port_853`).
    public var replayName: String
    /// Name of the control replay (`YoutubeRandom-02202024`, `port_443`).
    public var controlReplayName: String
    /// Whether this is a port test.
    public var isPortTest: Bool
    /// The user.
    public var userID: String
    /// History count of the run that produced this result.
    public var historyCount: Int
    /// The statistics and verdict.
    public var summary: AnalysisSummary
    /// Samples of the original replay as uploaded (the last, partial sample included).
    public var originalSamples: ThroughputSeries
    /// Samples of the control replay as uploaded.
    public var controlSamples: ThroughputSeries
    /// What the original replay measured (`nil` when its port was blocked).
    public var original: ReplayOutcome?
    /// What the control replay measured.
    public var control: ReplayOutcome?
    /// Whether a confirmation run produced this result (the first run's verdict is `firstVerdict`).
    public var confirmed: Bool
    /// The first run's verdict when a confirmation replaced it.
    public var firstVerdict: Verdict?
    /// Wall time of the whole test including a confirmation, seconds.
    public var durationSeconds: Double
    /// Bytes received over both replays (of the final run).
    public var bytesReceived: Int
    /// When the final run started.
    public var startedAt: Date
    /// The sensitive verdict beside the published one (`runInterleaved`); `nil` from `run`.
    public var sensitive: SensitiveSummary? = nil
    /// The network it was measured on: AS number and name, the provider name given, the link kind.
    public var network = NetworkProvider()

    /// The verdict.
    public var verdict: Verdict { summary.verdict }
    /// For differentiation: throttled or prioritized.
    public var direction: DifferentiationDirection? { summary.direction }
    /// The original replay's mean throughput, Mbit/s; `nil` when it was not measured (no sample), unlike a real 0.
    public var originalMeanMbps: Double? {
        MeasuredMean.value(summary.originalMeanMbps, samples: originalSamples.count, verdict: verdict)
    }
    /// The control replay's mean throughput, Mbit/s; `nil` when it was not measured (no sample).
    public var controlMeanMbps: Double? {
        MeasuredMean.value(summary.controlMeanMbps, samples: controlSamples.count, verdict: verdict)
    }
}
