import Synchronization

/// How many replays' samples one client network may store: `limit` over a rolling `window` (a token bucket per
/// network: `limit` at once, regained evenly over the window), the network being the IPv4 /24 or the IPv6 /48.
///
/// Sized from heavy real use: `wehe run --all` is about 25 tests, 50 with confirmations, two replays each (100 rows);
/// a DPI search adds one replay per probe (up to 200). The default 400 replays a day is a heavy user's whole run, a
/// DPI search and room for others behind the same address, and bounds what fake tests from one network can write.
/// Per process: a restart or another server of a fleet starts from a full bucket.
///
/// The table is bounded like `RateLimiter`'s: when `capacity` networks are tracked, those whose bucket is full again
/// are forgotten (they would get a full bucket anyway), then the least recently used eighth.
package final class StoredReplayQuota: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    /// Replays one network may store in a window.
    package let limit: Int
    /// The window.
    package let window: Duration
    /// Most networks tracked at once.
    package let capacity: Int

    /// Creates a quota.
    package init(limit: Int, window: Duration, capacity: Int = 65_536) {
        self.limit = max(1, limit)
        self.window = window
        self.capacity = max(8, capacity)
    }

    /// The network a client address counts against: IPv4 /24, IPv6 /48 (a site: one subscriber gets a /48 or /56,
    /// and a /64 per device would give one person thousands of quotas).
    package static func network(of address: String) -> String {
        if let bytes = AddressText.bytes(address), bytes.count == 16 {
            return bytes.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "/48"
        }
        return AddressText.network(address)
    }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Double {
        let elapsed = bucket.updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let windowSeconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        let rate = windowSeconds > 0 ? Double(limit) / windowSeconds : .infinity
        return min(Double(limit), bucket.tokens + max(0, seconds) * rate)
    }

    /// Whole replays `network` may still store now.
    package func remaining(_ network: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.withLock { buckets in
            guard let bucket = buckets[network] else { return limit }
            return Int(refilled(bucket, now: now).rounded(.down))
        }
    }

    /// Seconds until `network` may store one more replay (0 when it may now).
    package func secondsUntilNext(_ network: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.withLock { buckets in
            guard let bucket = buckets[network] else { return 0 }
            let tokens = refilled(bucket, now: now)
            guard tokens < 1 else { return 0 }
            let windowSeconds = Double(window.components.seconds)
            return Int(((1 - tokens) * windowSeconds / Double(limit)).rounded(.up))
        }
    }

    /// Takes one replay from `network`'s quota; `false` (nothing taken) when it is used up.
    package func take(_ network: String, now: ContinuousClock.Instant = .now) -> Bool {
        buckets.withLock { buckets in
            var bucket = buckets[network] ?? Bucket(tokens: Double(limit), updated: now)
            if buckets[network] == nil, buckets.count >= capacity {
                buckets = buckets.filter { refilled($0.value, now: now) < Double(limit) }
                if buckets.count >= capacity {
                    let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(capacity / 8)
                    for (forgotten, _) in oldest { buckets[forgotten] = nil }
                }
            }
            bucket.tokens = refilled(bucket, now: now)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[network] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[network] = bucket
            return true
        }
    }
}
