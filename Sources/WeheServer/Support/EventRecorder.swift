import Foundation
import Logging
import WeheStore

/// Writes session-log entries to the result store; a store failure is logged, never fatal to a session.
struct EventRecorder: Sendable {
    let store: any ResultStore
    let serverName: String
    let now: @Sendable () -> Date
    let logger: Logger

    /// Appends one entry.
    func record(
        _ kind: SessionEvent.Kind,
        declaration: WeheWireDeclaration? = nil,
        clientAddress: String? = nil,
        detail: String
    ) async {
        let event = SessionEvent(
            at: now(),
            kind: kind,
            userID: declaration?.userID,
            historyCount: declaration?.historyCount,
            testID: declaration?.testID,
            replayName: declaration?.replayName,
            clientAddress: clientAddress,
            serverName: serverName,
            detail: detail
        )
        do {
            try await store.append(event: event)
        } catch {
            logger.error(
                "session log entry not stored",
                metadata: ["wehe.event": "\(kind)", "wehe.error": "\(error)"]
            )
        }
    }
}

/// The fields of an ID declaration the session log needs (kept apart so the recorder does not depend on parsing).
struct WeheWireDeclaration: Sendable {
    var userID: String
    var historyCount: Int
    var testID: Int
    var replayName: String
}
