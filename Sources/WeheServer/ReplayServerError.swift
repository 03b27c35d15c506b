/// The error of the `WeheServer` target: the server could not start, or one connection broke the protocol.
///
/// Errors about a single connection never stop the server: the connection is closed and the error logged and
/// recorded in the session log. Errors about the server as a whole (a port that cannot be bound, unreadable
/// certificates, a replay directory without traces) are thrown from `ReplayServer.run()`.
public struct ReplayServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The configuration is inconsistent (a port out of range, an empty replay directory, a bad option).
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// A listener could not be bound (port in use, no permission for a port below 1024).
        public static let bindFailed = Code(name: "bindFailed")
        /// A certificate or key could not be read or created.
        public static let certificate = Code(name: "certificate")
        /// A replay trace could not be loaded.
        public static let replayLoading = Code(name: "replayLoading")
        /// A peer broke the side-channel protocol (unexpected message, malformed body, bad framing).
        public static let protocolViolation = Code(name: "protocolViolation")
        /// A peer was too slow or went silent.
        public static let timeout = Code(name: "timeout")
        /// A connection came from an address without an admitted session.
        public static let unknownClient = Code(name: "unknownClient")
        /// The peer closed the connection before the exchange was complete.
        public static let connectionClosed = Code(name: "connectionClosed")
        /// The server is shutting down.
        public static let shuttingDown = Code(name: "shuttingDown")
        /// The result store failed.
        public static let storage = Code(name: "storage")
        /// The other server of a WeHeY pair could not be asked for its measurements (unreachable, slow, refused,
        /// or an answer that does not parse).
        public static let peer = Code(name: "peer")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// What happened, in words.
    public var message: String
    /// The underlying error, when there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// `code: message`.
    public var description: String {
        if let underlying { return "\(code): \(message) (\(underlying))" }
        return "\(code): \(message)"
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: ReplayServerError, rhs: ReplayServerError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
