import Logging
import NIOCore
import Synchronization

/// Where a TCP connection's setup may fail, for one connection only (the listener must go on).
package enum ConnectionSetupStage: String, Sendable {
    /// NIO's accept handler: child channel options and the bootstrap's child initializer. A failure here is reported
    /// down the listening socket's pipeline, where it used to end the accept stream and with it the listener.
    case accepted
    /// The connection's own pipeline (TLS handler, timeouts, the async wrapper). NIO drops a connection whose
    /// initializer failed without closing its socket.
    case pipeline
}

/// A seam for tests: a fault to inject while a connection is set up (`nil`: none). Real setups fail on their own
/// (a socket option the system refuses, a connection reset while its handlers are added); a test makes one fail
/// on purpose to check that the listener survives it.
package final class ConnectionSetupFaults: Sendable {
    private let fault = Mutex<(@Sendable (ConnectionSetupStage) throws -> Void)?>(nil)

    /// Creates a seam without a fault.
    package init() {}

    /// Sets (or clears) the fault, called at each stage of every connection's setup.
    package func inject(_ newFault: (@Sendable (ConnectionSetupStage) throws -> Void)?) {
        fault.withLock { $0 = newFault }
    }

    func check(_ stage: ConnectionSetupStage) throws {
        try fault.withLock { $0 }?(stage)
    }
}

/// Counts and logs connections whose setup failed (at most one line a second, with the count since the last),
/// so a burst of failures shows without flooding the log.
final class ConnectionSetupFailureLog: Sendable {
    private struct State {
        var lastLog: ContinuousClock.Instant?
        var suppressed = 0
    }
    let kind: String
    let logger: Logger
    let metrics: ServerMetrics
    private let state = Mutex(State())

    init(kind: String, logger: Logger, metrics: ServerMetrics) {
        self.kind = kind
        self.logger = logger
        self.metrics = metrics
    }

    func record(_ error: any Error, stage: ConnectionSetupStage) {
        metrics.connectionFailed(kind, reason: "setup")
        let now = ContinuousClock.now
        let count: Int? = state.withLock { state in
            if let last = state.lastLog, last.duration(to: now) < .seconds(1) {
                state.suppressed += 1
                return nil
            }
            let count = state.suppressed + 1
            state.lastLog = now
            state.suppressed = 0
            return count
        }
        guard let count else { return }
        logger.warning(
            "connection setup failed; the connection is closed, the listener goes on",
            metadata: [
                "wehe.channel": "\(kind)", "wehe.stage": "\(stage.rawValue)", "wehe.error": "\(error)",
                "wehe.failures.since_last": "\(count)",
            ])
    }
}

/// On a listening socket, right after NIO's accept handler: takes the errors it reports for one accepted connection
/// (whose socket it has already closed) so they do not reach the accept stream, which ends at the first error it
/// sees. Such an error never concerns the listening socket itself: a failure of that one closes it, and its stream
/// ends with the close.
final class ConnectionSetupErrorAbsorber: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let failures: ConnectionSetupFailureLog

    init(failures: ConnectionSetupFailureLog) { self.failures = failures }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failures.record(error, stage: .accepted)
    }
}
