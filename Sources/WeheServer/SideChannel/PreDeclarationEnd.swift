import Logging

/// How a side channel ended before its ID declaration, in the two cases that are not the client's protocol failing.
///
/// - `unused`: the client closed the connection without sending a byte. Our adaptive client opens each replay's side
///   channel while the replay before runs, so that its handshakes cost no round trip; the one opened during a test's
///   last round is never needed and is closed like this, once per test. It is not an error: it is counted apart
///   (`wehe_connections_unused_total`) and logged at debug level only.
/// - `timedOut`: nothing complete arrived within the first-message timeout, and the server closed the connection
///   (an idle or trickling connection, or a client that stalled in its handshake).
///
/// Every other end before the declaration (a TLS failure, a malformed declaration, bytes and then a close) stays a
/// failure of its own kind.
enum PreDeclarationEnd: Equatable {
    case unused
    case timedOut

    /// The end of a connection whose first read failed with `error`; `silent` when the client had sent nothing,
    /// `timedOut` when the server's first-message deadline closed it. `nil` for every other failure.
    init?(_ error: any Error, silent: Bool, timedOut: Bool) {
        if timedOut {
            self = .timedOut
        } else if silent, let error = error as? ReplayServerError, error.code == .connectionClosed {
            self = .unused
        } else {
            return nil
        }
    }

    /// The metric's and the log's code.
    var code: String {
        switch self {
        case .unused: "unused"
        case .timedOut: "first-message-timeout"
        }
    }

    var reason: String {
        switch self {
        case .unused: "the client closed the connection before sending anything (opened ahead, not needed)"
        case .timedOut: "no ID declaration within the first-message timeout"
        }
    }

    /// An unused connection is routine; a timeout is worth an operator's notice, as the failures are.
    var level: Logger.Level {
        switch self {
        case .unused: .debug
        case .timedOut: .notice
        }
    }
}
