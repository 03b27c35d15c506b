/// What a recording kept and dropped, what identifies the app, and how good a test it makes.
public struct RecordingReport: Sendable, Hashable {
    /// One flow of the client in the capture.
    public struct Flow: Sendable, Hashable {
        /// Number in order of first packet (what `--flows` takes).
        public var number: Int
        /// `tcp` or `udp`.
        public var transport: String
        /// Server address and port as `address:port` (`[address]:port` for IPv6).
        public var server: String
        /// The client's port.
        public var clientPort: Int
        /// TLS server name (SNI) of the first client bytes.
        public var serverName: String?
        /// HTTP Host of the first request.
        public var host: String?
        /// Payload bytes client to server, server to client.
        public var bytesUp: Int
        public var bytesDown: Int
        /// Whether the flow is in the test.
        public var kept: Bool
        /// Why it was dropped.
        public var dropReason: String?
        /// Repairs and defects (retransmissions dropped, segments put back in order, bytes missing, …).
        public var notes: [String]
        /// The first client bytes a classifier sees (hex, at most 32 bytes).
        public var firstBytesHex: String
        /// Sizes of the first TLS records client to server and server to client, for TLS flows.
        public var tlsRecordsUp: [Int]?
        public var tlsRecordsDown: [Int]?
    }

    /// A cleartext secret replaced in the test.
    public struct Redaction: Sendable, Hashable {
        public var flow: Int
        /// `Cookie`, `Set-Cookie`, `Authorization`, `Proxy-Authorization` or `query`.
        public var kind: String
        public var count: Int
        public var bytes: Int
    }

    /// An idle stretch of the kept flows.
    public struct Gap: Sendable, Hashable {
        /// Seconds after the test's first packet (as recorded).
        public var start: Double
        /// Length as recorded.
        public var length: Double
        /// Length in the test when `--shorten-gaps` shortened it.
        public var shortenedTo: Double?
    }

    public var testID: String
    public var replayName: String
    public var transport: String
    /// Frames read, frames of other hosts, frames skipped by reason.
    public var frames: Int
    public var otherHostFrames: Int
    public var skippedFrames: [String: Int]
    /// The recorder's address and what it became in the test.
    public var clientAddress: String
    public var clientRewrittenTo: String
    public var flows: [Flow]
    public var redactions: [Redaction]
    public var gaps: [Gap]
    public var gapThreshold: Double
    /// Bytes of the test (client to server; server to client).
    public var bytesUp: Int
    public var bytesDown: Int
    /// Seconds one replay lasts as recorded (after shortening).
    public var replaySeconds: Double
    /// Seconds a test takes at least: the original and its control, each on the recorded schedule.
    public var expectedTestSeconds: Double
    public var warnings: [String]
    /// Files written (set by the writer).
    public var files: [String]
}
