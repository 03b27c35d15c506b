/// The error of the `WeheReplay` target: a replay could not be carried out.
public struct WeheReplayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The trace cannot be replayed (no packets, mixed transports, a flow the transport does not know).
        public static let invalidTrace = Code(name: "invalidTrace")
        /// The replay server could not be reached (connection refused, unreachable, connect timeout).
        public static let connectFailed = Code(name: "connectFailed")
        /// The server closed the connection with 100 or more response bytes still missing.
        public static let responseIncomplete = Code(name: "responseIncomplete")
        /// The server sent nothing for longer than the idle timeout.
        public static let serverStoppedAnswering = Code(name: "serverStoppedAnswering")
        /// Reading or writing failed for another reason.
        public static let transportFailed = Code(name: "transportFailed")
        /// The replay was cancelled (Ctrl-C, the caller's task was cancelled).
        public static let cancelled = Code(name: "cancelled")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// A human-readable explanation.
    public var message: String
    /// Index of the packet being sent or awaited, when the problem concerns one.
    public var packetIndex: Int?
    /// The underlying error, if any (kept for logs; not part of equality).
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, packetIndex: Int? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.packetIndex = packetIndex
        self.underlying = underlying
    }

    /// `message`, with the packet index when known.
    public var description: String {
        if let packetIndex { return "\(message) (packet \(packetIndex))" }
        return message
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: WeheReplayError, rhs: WeheReplayError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
