/// What one server contributes to the loss-correlation test: its loss timeline for the simultaneous original replay
/// and its minimum round-trip time.
public struct LossBranch: Sendable, Hashable, Codable {
    /// Sent and lost bytes over time.
    public var timeline: LossTimeline
    /// Smallest RTT seen on the connection, seconds.
    public var minimumRTT: Double
    /// Replay duration, seconds; by default the time of the last sample.
    public var duration: Double

    /// Creates a branch.
    public init(timeline: LossTimeline, minimumRTT: Double, duration: Double? = nil) {
        self.timeline = timeline
        self.minimumRTT = minimumRTT
        self.duration = duration ?? timeline.duration
    }
}
