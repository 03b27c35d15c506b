public import WeheCore

/// What the replay engine talks to instead of sockets: the TCP or UDP connection(s) of one replay.
///
/// `WeheClient` implements it with SwiftNIO; tests use an in-memory implementation driven by a manual clock. A
/// transport may throw `WeheReplayError` (kept as is) or any other error (reported as `.transportFailed`).
public protocol ReplayTransport: Sendable {
    /// Called once, before the first packet. Inbound bytes that arrive on their own (UDP) are counted into `meter`
    /// from now on.
    func start(meter: ThroughputMeter) async throws

    /// Sends one packet's payload on its flow (opening a TCP connection lazily on the flow's first payload).
    /// Zero-length UDP payloads (keep-alives) are sent as empty datagrams.
    func send(_ packet: ReplayPacket, index: Int) async throws

    /// Reads the response to a TCP packet: exactly `length` bytes, counting each chunk into `meter` as it arrives.
    /// - Parameters:
    ///   - length: bytes expected (`response_len`, positive).
    ///   - packet: the packet the response answers (its flow).
    ///   - index: its index in the trace.
    ///   - limits: the time left before the replay deadline and the idle timeout.
    ///   - meter: where received bytes are counted.
    /// - Returns: how the read ended. Throws `WeheReplayError` `.serverStoppedAnswering` when nothing arrived for
    ///   `limits.idleTimeout`.
    func receiveResponse(
        length: Int,
        for packet: ReplayPacket,
        index: Int,
        limits: ReplayReadLimits,
        meter: ThroughputMeter
    ) async throws -> ResponseRead

    /// After the last packet: waits (at most `remaining`) until inbound traffic that is still expected has arrived,
    /// e.g. the server's UDP flows reporting `DONE`. TCP transports return at once.
    func drain(remaining: Duration) async throws

    /// Closes every connection. Called exactly once, also after errors and cancellation.
    func close() async
}

/// Time limits for one response read.
public struct ReplayReadLimits: Sendable, Hashable {
    /// Time left before the replay deadline; the read ends with `.deadlineReached` when it runs out.
    public var remaining: Duration
    /// Longest silence accepted before the server counts as not answering.
    public var idleTimeout: Duration

    /// Creates limits.
    public init(remaining: Duration, idleTimeout: Duration) {
        self.remaining = remaining
        self.idleTimeout = idleTimeout
    }
}

/// How reading one response ended.
public enum ResponseRead: Sendable, Hashable {
    /// Every expected byte arrived.
    case complete
    /// The server closed the connection after `received` of the expected bytes.
    case closed(received: Int)
    /// The replay deadline passed after `received` bytes.
    case deadlineReached(received: Int)
}
