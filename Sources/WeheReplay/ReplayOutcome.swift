public import WeheCore

/// What a completed replay measured.
public struct ReplayOutcome: Sendable, Hashable {
    /// The throughput samples to upload (the last one covers a partial interval; the server drops it).
    public var samples: ThroughputSeries
    /// The sample interval Δ.
    public var sampleInterval: Duration
    /// Duration of the sending phase (what `DONE;<seconds>` reports).
    public var duration: Duration
    /// Payload bytes sent.
    public var bytesSent: Int
    /// Response bytes received.
    public var bytesReceived: Int
    /// Packets sent.
    public var packetsSent: Int
    /// Whether the deadline cut the replay short.
    public var reachedDeadline: Bool
    /// Whether the server closed a TCP connection early (fewer than the tolerated bytes missing).
    public var serverClosedEarly: Bool
    /// Lateness of each send against its recorded time (`start + timestamp`); only with timing on. It includes
    /// waiting for an earlier response that arrived after the next packet's recorded time.
    public var scheduleLateness: SendLateness
    /// Lateness of each send against the moment the engine could send it (the later of its recorded time and the
    /// end of the previous response): the engine's own timing precision.
    public var engineLateness: SendLateness
    /// When the last response bytes in `samples` arrived, from the replay start (`ThroughputMeter.lastArrival`):
    /// inside the interval of the last sample that counts bytes, which can lie past `duration` when responses in
    /// flight arrived after the replay ended early. `nil` when nothing arrived. Not uploaded: the published protocol
    /// has no field for it.
    public var lastArrival: Duration?

    /// Creates an outcome.
    public init(
        samples: ThroughputSeries,
        sampleInterval: Duration,
        duration: Duration,
        bytesSent: Int,
        bytesReceived: Int,
        packetsSent: Int,
        reachedDeadline: Bool,
        serverClosedEarly: Bool,
        scheduleLateness: SendLateness,
        engineLateness: SendLateness,
        lastArrival: Duration? = nil
    ) {
        self.samples = samples
        self.sampleInterval = sampleInterval
        self.duration = duration
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.packetsSent = packetsSent
        self.reachedDeadline = reachedDeadline
        self.serverClosedEarly = serverClosedEarly
        self.scheduleLateness = scheduleLateness
        self.engineLateness = engineLateness
        self.lastArrival = lastArrival
    }
}
