public import WeheReplay
public import WeheWire

/// The error of the `WeheClient` target: a test could not be run or its result not obtained.
///
/// Each code maps to one documented exit code of the `wehe` command.
public struct ReplayClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The server (side channel, replay port or analyzer) could not be reached.
        public static let unreachable = Code(name: "unreachable")
        /// The TLS handshake failed (certificate not trusted, not TLS).
        public static let tlsFailed = Code(name: "tlsFailed")
        /// The server refused the replay (`0;<code>`); `denial` says why.
        public static let admissionRefused = Code(name: "admissionRefused")
        /// The server sent something the protocol does not allow, or closed the side channel unexpectedly.
        public static let protocolViolation = Code(name: "protocolViolation")
        /// The server stopped answering (side channel or replay connection silent past the timeout).
        public static let serverStoppedAnswering = Code(name: "serverStoppedAnswering")
        /// The replay itself failed (connection reset, too many response bytes missing).
        public static let replayFailed = Code(name: "replayFailed")
        /// The port map has no entry for the trace's server address and port.
        public static let portMapMissing = Code(name: "portMapMissing")
        /// The analyzer refused the request or never produced a result.
        public static let analyzerFailed = Code(name: "analyzerFailed")
        /// The analyzer's result belongs to another user or test.
        public static let resultMismatch = Code(name: "resultMismatch")
        /// A trace or catalog file is missing or unreadable.
        public static let missingTrace = Code(name: "missingTrace")
        /// A trace or catalog file is malformed, or the configuration is invalid.
        public static let invalidInput = Code(name: "invalidInput")
        /// The result could not be stored in the history.
        public static let storeFailed = Code(name: "storeFailed")
        /// The test was cancelled (Ctrl-C).
        public static let cancelled = Code(name: "cancelled")
        /// The server does not have a recorded test and would not take it from the client (`ClientTraceUpload`).
        public static let clientTracesRefused = Code(name: "clientTracesRefused")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// One line for people.
    public var message: String
    /// For `.admissionRefused`: the server's reason.
    public var denial: PermissionReply.DenialReason?
    /// The replay engine's error, when the replay failed.
    public var replayError: WeheReplayError?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        denial: PermissionReply.DenialReason? = nil,
        replayError: WeheReplayError? = nil
    ) {
        self.code = code
        self.message = message
        self.denial = denial
        self.replayError = replayError
    }

    /// `message`.
    public var description: String { message }

    /// Errors are equal when their codes (and denial reasons) are.
    public static func == (lhs: ReplayClientError, rhs: ReplayClientError) -> Bool {
        lhs.code == rhs.code && lhs.denial == rhs.denial
    }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Translates a replay engine error.
    static func replay(_ error: WeheReplayError, name: String) -> ReplayClientError {
        switch error.code {
        case .cancelled: ReplayClientError(.cancelled, "the test was cancelled", replayError: error)
        case .connectFailed:
            ReplayClientError(.unreachable, "replay \(name): \(error.description)", replayError: error)
        case .serverStoppedAnswering:
            ReplayClientError(
                .serverStoppedAnswering, "replay \(name): the server stopped answering", replayError: error)
        default: ReplayClientError(.replayFailed, "replay \(name): \(error.description)", replayError: error)
        }
    }
}
