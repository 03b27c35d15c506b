package import Foundation
package import WeheCore

/// The throughput samples of one replay of a test, as the server stores them (last sample already dropped).
package struct ReplayRecord: Sendable, Hashable, Codable {
    /// Which replay: user, history count and testID (0 original, 1 control, ≥ 2 DPI probes).
    package var key: ReplayKey
    /// The name of this replay (the control's name carries `Random`).
    package var replayName: String
    /// The throughput samples.
    package var samples: ThroughputSeries
    /// When the samples arrived.
    package var receivedAt: Date
    /// Duration of the sending phase as reported by the client (`DONE;<seconds>`), if known.
    package var clientDurationSeconds: Double?
    /// Whether the client stopped this replay at the time limit (45/40/30 s) before it finished, so the samples
    /// cover only part of the trace. `nil` when not known: the server cannot tell (the published
    /// protocol's `DONE` does not say), and rows written before schema version 6 do not record it.
    package var reachedTimeLimit: Bool?

    /// Creates a replay record.
    package init(
        key: ReplayKey,
        replayName: String,
        samples: ThroughputSeries,
        receivedAt: Date,
        clientDurationSeconds: Double? = nil,
        reachedTimeLimit: Bool? = nil
    ) {
        self.key = key
        self.replayName = replayName
        self.samples = samples
        self.receivedAt = receivedAt
        self.clientDurationSeconds = clientDurationSeconds
        self.reachedTimeLimit = reachedTimeLimit
    }
}
