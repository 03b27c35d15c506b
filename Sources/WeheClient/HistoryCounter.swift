import Synchronization

/// Hands out the per-user test counter (`historyCount`, protocol.md section 2): one new value per test, and a new
/// one for a confirmation run too (as the Android client does; the command-line client v3.3 reuses it, which makes
/// the server overwrite the first run's files).
public protocol HistoryCounter: Sendable {
    /// The next history count (each call returns a new, larger value).
    func next() async throws -> Int
}

/// A counter kept in memory, starting after `last`.
public final class InMemoryHistoryCounter: HistoryCounter {
    private let value: Mutex<Int>

    /// Creates a counter whose first value is `last + 1`.
    public init(last: Int = 0) {
        value = Mutex(last)
    }

    /// The last value handed out.
    public var last: Int { value.withLock { $0 } }

    /// The next value.
    public func next() async throws -> Int {
        value.withLock { current in
            current += 1
            return current
        }
    }
}
