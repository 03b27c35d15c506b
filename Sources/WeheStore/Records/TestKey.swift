package import WeheCore

/// Identifies one test: a user and that user's test counter (protocol.md section 2). Both replays of a test share
/// the key; WeHeY simultaneous replays get their own history counts and so their own keys.
package struct TestKey: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The per-installation user id (`randomID`), opaque ASCII.
    package var userID: String
    /// The per-user test counter.
    package var historyCount: Int

    /// Creates a key.
    package init(userID: String, historyCount: Int) {
        self.userID = userID
        self.historyCount = historyCount
    }

    /// The key of replay `testID` of this test.
    package func replay(_ testID: Int) -> ReplayKey {
        ReplayKey(userID: userID, historyCount: historyCount, testID: testID)
    }

    /// `userID/historyCount`.
    package var description: String { "\(userID)/\(historyCount)" }

    /// Orders by user id, then history count.
    package static func < (lhs: TestKey, rhs: TestKey) -> Bool {
        (lhs.userID, lhs.historyCount) < (rhs.userID, rhs.historyCount)
    }
}

extension ReplayKey {
    /// The key of the test this replay belongs to.
    package var test: TestKey { TestKey(userID: userID, historyCount: historyCount) }
}
