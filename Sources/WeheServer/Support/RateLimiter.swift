import Synchronization

/// Allows each key (a client address or network) at most `burst` events, refilled at `perMinute` a minute: a token
/// bucket per key. The table of keys is bounded: when it is full, keys whose bucket is full again are forgotten (they
/// would get a full bucket anyway), and if that frees nothing, the eighth of the keys with the oldest events are
/// (their buckets are the fullest): a flood from many addresses can neither grow the table without bound nor shut
/// every new caller out.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    /// Events a key may have in a burst.
    package let burst: Int
    /// Events a key regains per minute.
    package let perMinute: Double
    /// Most keys tracked at once.
    package let capacity: Int

    /// Keys tracked now.
    package var count: Int { buckets.withLock { $0.count } }

    /// Creates a limiter.
    package init(perMinute: Double, burst: Int, capacity: Int = 65_536) {
        self.perMinute = perMinute
        self.burst = max(1, burst)
        self.capacity = capacity
    }

    /// The tokens `bucket` holds at `now`, refilled since its last event.
    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Double {
        let elapsed = bucket.updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return min(Double(burst), bucket.tokens + max(0, seconds) * perMinute / 60)
    }

    /// Whole events `key` may have now.
    package func remaining(_ key: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return burst }
            return Int(refilled(bucket, now: now).rounded(.down))
        }
    }

    /// Seconds until `key` may have one more event (0 when it may now).
    package func secondsUntilNext(_ key: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.withLock { buckets in
            guard let bucket = buckets[key] else { return 0 }
            let tokens = refilled(bucket, now: now)
            guard tokens < 1, perMinute > 0 else { return 0 }
            return Int(((1 - tokens) * 60 / perMinute).rounded(.up))
        }
    }

    /// Takes one event for `key`; `false` when its bucket is empty (nothing taken).
    package func allow(_ key: String, now: ContinuousClock.Instant = .now) -> Bool {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: Double(burst), updated: now)
            if buckets[key] == nil, buckets.count >= capacity {
                buckets = buckets.filter { refilled($0.value, now: now) < Double(burst) }
                if buckets.count >= capacity {
                    // Sorting once frees an eighth of the table: the next evictions are that many events away.
                    let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(max(1, capacity / 8))
                    for (forgotten, _) in oldest { buckets[forgotten] = nil }
                }
            }
            bucket.tokens = refilled(bucket, now: now)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return true
        }
    }
}
