/// Identifies one replay of one test on a server (protocol.md section 2).
public struct ReplayKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The per-installation user id (`randomID`), opaque ASCII.
    public var userID: String
    /// The per-user test counter shared by both replays of a test.
    public var historyCount: Int
    /// 0 = original replay, 1 = control replay, ≥ 2 = DPI probes.
    public var testID: Int

    /// Creates a key.
    public init(userID: String, historyCount: Int, testID: Int) {
        self.userID = userID
        self.historyCount = historyCount
        self.testID = testID
    }

    /// `userID/historyCount/testID`.
    public var description: String { "\(userID)/\(historyCount)/\(testID)" }
}

/// Whether a replay is the recorded original or the bit-inverted control.
public enum ReplayRole: Int, Sendable, Hashable, Codable {
    /// The recorded app traffic (testID 0).
    case original = 0
    /// The bit-inverted control, or port 443 for port tests (testID 1).
    case control = 1
}
