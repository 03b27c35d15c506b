package import Foundation
package import WeheCore

/// What the server saw of the data it sent during one replay, for the WeHeY loss-correlation test (analysis.md
/// section 6.4): a timeline of sent and retransmitted payload bytes, the connection's minimum round-trip time and
/// the replay's duration. Times are seconds since the replay's own start on this server, never wall-clock times,
/// so that the timelines of two servers whose clocks disagree can still be aligned.
///
/// Stored separately from the throughput samples (`ReplayRecord`): the replay connection and the side channel
/// finish in either order.
package struct ReplayLossRecord: Sendable, Hashable, Codable {
    /// How the timeline was measured.
    package enum Source: String, Sendable, Hashable, Codable {
        /// The kernel's `TCP_INFO` counters of the replay socket, sampled periodically.
        case tcpInfo = "tcp-info"
        /// A UDP replay: the server's own log of the datagrams it sent, and the client's report of those that
        /// arrived (the rest count as lost). One reading per datagram.
        case clientReport = "client-report"
    }

    /// One reading: during the stretch ending at `time`, `bytesSent` payload bytes went out (retransmissions
    /// included), `bytesLost` of them were retransmissions (TCP) or never reached the client (UDP).
    package struct Sample: Sendable, Hashable, Codable {
        /// End of the stretch, seconds since the replay started.
        package var time: Double
        /// Payload bytes sent in the stretch, retransmissions included.
        package var bytesSent: Double
        /// Of those, retransmitted bytes (TCP) or bytes of datagrams the client did not receive (UDP): lost.
        package var bytesLost: Double

        /// Creates a sample.
        package init(time: Double, bytesSent: Double, bytesLost: Double) {
            self.time = time
            self.bytesSent = bytesSent
            self.bytesLost = bytesLost
        }
    }

    /// Which replay.
    package var key: ReplayKey
    /// How it was measured.
    package var source: Source
    /// When the replay ended (wall clock of this server; informative only).
    package var recordedAt: Date
    /// Smallest RTT the kernel measured on the connection, seconds; `nil` when it never measured one.
    package var minimumRTT: Double?
    /// Seconds from the replay's start to its last reading.
    package var duration: Double
    /// The readings, in time order.
    package var samples: [Sample]

    /// Creates a record.
    package init(
        key: ReplayKey,
        source: Source = .tcpInfo,
        recordedAt: Date,
        minimumRTT: Double?,
        duration: Double,
        samples: [Sample]
    ) {
        self.key = key
        self.source = source
        self.recordedAt = recordedAt
        self.minimumRTT = minimumRTT
        self.duration = duration
        self.samples = samples
    }

    /// The most readings one record may hold (a 90-second connection sampled every millisecond).
    package static let maximumSamples = 90_000

    /// Checks the key and the readings: finite, non-negative, in time order, lost ≤ sent, a positive finite
    /// minimum RTT when given, at most `maximumSamples`.
    package func validated(database: String) throws(WeheStoreError) -> ReplayLossRecord {
        _ = try key.test.validated(database: database)
        guard key.testID >= 0 else {
            throw WeheStoreError(.invalidRecord, database: database, "loss of \(key): testID is negative")
        }
        guard samples.count <= Self.maximumSamples else {
            throw WeheStoreError(
                .invalidRecord, database: database,
                "loss of \(key): \(samples.count) readings, more than \(Self.maximumSamples)")
        }
        if let minimumRTT, !(minimumRTT.isFinite && minimumRTT > 0) {
            throw WeheStoreError(.invalidRecord, database: database, "loss of \(key): minimum RTT must be positive")
        }
        guard duration.isFinite, duration >= 0 else {
            throw WeheStoreError(.invalidRecord, database: database, "loss of \(key): duration must be ≥ 0")
        }
        var previous = 0.0
        for (index, sample) in samples.enumerated() {
            guard sample.time.isFinite, sample.time >= previous, sample.bytesSent.isFinite, sample.bytesLost.isFinite,
                sample.bytesLost >= 0, sample.bytesLost <= sample.bytesSent
            else {
                throw WeheStoreError(
                    .invalidRecord, database: database,
                    "loss of \(key): reading \(index) is out of order, not finite, or loses more than it sent")
            }
            previous = sample.time
        }
        return self
    }
}
