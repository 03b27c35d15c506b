package import Foundation
package import WeheCore

/// The compact form of one test that the crowd-sourced analysis consumes (analysis.md section 4.1): who, which
/// provider and replay, when, and the original and control samples as stored.
package struct CrowdTestRecord: Sendable, Hashable {
    /// The test's key.
    package var key: TestKey
    /// Provider name, as stored (alias merging is the analysis's job).
    package var provider: String
    /// Name of the original replay.
    package var replayName: String
    /// When the test started.
    package var startedAt: Date
    /// Network type, if known.
    package var networkType: String?
    /// Mean of the original replay's samples, Mbit/s (zeros included).
    package var originalMeanMbps: Double
    /// Mean of the control replay's samples, Mbit/s (zeros included).
    package var controlMeanMbps: Double
    /// The original replay's samples; empty when the query asked for means only.
    package var original: ThroughputSeries
    /// The control replay's samples; empty when the query asked for means only.
    package var control: ThroughputSeries

    /// Creates a record.
    package init(
        key: TestKey,
        provider: String,
        replayName: String,
        startedAt: Date,
        networkType: String?,
        originalMeanMbps: Double,
        controlMeanMbps: Double,
        original: ThroughputSeries,
        control: ThroughputSeries
    ) {
        self.key = key
        self.provider = provider
        self.replayName = replayName
        self.startedAt = startedAt
        self.networkType = networkType
        self.originalMeanMbps = originalMeanMbps
        self.controlMeanMbps = controlMeanMbps
        self.original = original
        self.control = control
    }
}
