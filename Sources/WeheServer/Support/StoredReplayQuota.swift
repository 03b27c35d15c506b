/// How many replays' samples one client network may store: `limit` over a rolling `window` (a token bucket per
/// network: `limit` at once, regained evenly over the window), the network being the IPv4 /24 or the IPv6 /48.
///
/// Sized from heavy real use: `wehe run --all` is about 25 tests, 50 with confirmations, two replays each (100 rows);
/// a DPI search adds one replay per probe (up to 200). The default 400 replays a day is a heavy user's whole run, a
/// DPI search and room for others behind the same address, and bounds what fake tests from one network can write.
/// Per process: a restart or another server of a fleet starts from a full bucket.
///
/// A `RateLimiter` keyed by network, whose burst is the limit and whose refill spreads it over the window; its table
/// is bounded the same way.
package final class StoredReplayQuota: Sendable {
    private let buckets: RateLimiter
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
        let windowSeconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        let perMinute = windowSeconds > 0 ? Double(self.limit) * 60 / windowSeconds : .infinity
        self.buckets = RateLimiter(perMinute: perMinute, burst: self.limit, capacity: self.capacity)
    }

    /// The network a client address counts against: IPv4 /24, IPv6 /48 (a site: one subscriber gets a /48 or /56,
    /// and a /64 per device would give one person thousands of quotas).
    package static func network(of address: String) -> String {
        if let bytes = AddressText.bytes(address), bytes.count == 16 {
            return bytes.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "/48"
        }
        return AddressText.network(address)
    }

    /// Whole replays `network` may still store now.
    package func remaining(_ network: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.remaining(network, now: now)
    }

    /// Seconds until `network` may store one more replay (0 when it may now).
    package func secondsUntilNext(_ network: String, now: ContinuousClock.Instant = .now) -> Int {
        buckets.secondsUntilNext(network, now: now)
    }

    /// Takes one replay from `network`'s quota; `false` (nothing taken) when it is used up.
    package func take(_ network: String, now: ContinuousClock.Instant = .now) -> Bool {
        buckets.allow(network, now: now)
    }
}
