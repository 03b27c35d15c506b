package import Foundation

/// One entry of a server's session log: an admission decision, a completed replay, an error, a result queued or
/// refused because the database was away.
package struct SessionEvent: Sendable, Hashable, Codable {
    /// What happened. Open set: servers may define more kinds.
    package struct Kind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The stored name.
        package var rawValue: String
        /// Creates a kind from its stored name.
        package init(rawValue: String) { self.rawValue = rawValue }
        /// A replay was admitted (`1;<ip>;100`).
        package static let admissionGranted = Kind(rawValue: "admission-granted")
        /// A replay was refused (`0;1`, `0;2;100`, `0;3`); the detail says why.
        package static let admissionDenied = Kind(rawValue: "admission-denied")
        /// A replay ran to the end and its samples were stored.
        package static let replayCompleted = Kind(rawValue: "replay-completed")
        /// A session ended with an error.
        package static let error = Kind(rawValue: "error")
        /// A result could not be written at once and was queued for retry.
        package static let resultQueued = Kind(rawValue: "result-queued")
        /// A result was refused (queue full or a permanent database error).
        package static let resultRefused = Kind(rawValue: "result-refused")
        /// `rawValue`.
        package var description: String { rawValue }
    }

    /// When it happened.
    package var at: Date
    /// What happened.
    package var kind: Kind
    /// The user concerned, if known.
    package var userID: String?
    /// The history count concerned, if known.
    package var historyCount: Int?
    /// The testID concerned, if known.
    package var testID: Int?
    /// The replay concerned, if known.
    package var replayName: String?
    /// The client address; anonymised on write like test metadata.
    package var clientAddress: String?
    /// The server that logged it.
    package var serverName: String?
    /// Details in words (denial code, error text).
    package var detail: String

    /// Creates an event.
    package init(
        at: Date,
        kind: Kind,
        userID: String? = nil,
        historyCount: Int? = nil,
        testID: Int? = nil,
        replayName: String? = nil,
        clientAddress: String? = nil,
        serverName: String? = nil,
        detail: String = ""
    ) {
        self.at = at
        self.kind = kind
        self.userID = userID
        self.historyCount = historyCount
        self.testID = testID
        self.replayName = replayName
        self.clientAddress = clientAddress
        self.serverName = serverName
        self.detail = detail
    }
}
