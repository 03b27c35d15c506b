import Synchronization

/// A token bucket shared by several tasks (the aggregate bucket of all matched flows, or one flow's bucket used
/// by its relay task).
package final class SharedBucket: Sendable {
    private let bucket: Mutex<TokenBucket>

    /// A full bucket for `rateBitsPerSecond` and `burstBytes`.
    package init(rateBitsPerSecond: Int, burstBytes: Int) {
        bucket = Mutex(TokenBucket(rateBitsPerSecond: rateBitsPerSecond, burstBytes: burstBytes))
    }

    /// Reserves bytes; see ``TokenBucket/reserve(_:at:backlogLimit:)``.
    package func reserve(_ bytes: Int, at now: Duration, backlogLimit: Int? = nil) -> Duration? {
        bucket.withLock { $0.reserve(bytes, at: now, backlogLimit: backlogLimit) }
    }
}
