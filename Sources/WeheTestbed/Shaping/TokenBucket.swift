/// A token bucket in reservation form: each call reserves bytes and learns *when* they may leave.
///
/// The bucket holds up to `burst` bytes of credit and refills at the configured rate. Reserving `n` bytes takes
/// `n` of credit; when the credit goes negative, the bytes leave at the moment the refill pays the debt back.
/// Reservations made one after the other therefore leave in order and, over any interval, no more than
/// `burst + rate × interval` bytes leave. Time is the elapsed time of an injected clock, so the bucket is a pure
/// value that tests drive with any instants they like.
///
/// Arithmetic is exact: credit is kept in nano-bits (10⁻⁹ bit) as a 128-bit integer, so a rate of `R` bit/s
/// refills exactly `R` nano-bits per nanosecond and departures are whole nanoseconds, rounded up.
package struct TokenBucket: Sendable, Hashable {
    /// The refill rate in bits per second (= nano-bits per nanosecond).
    package let rateBitsPerSecond: Int
    /// The bucket depth in bytes.
    package let burstBytes: Int
    /// The credit in nano-bits at `updated`; negative while reserved bytes wait.
    private var credit: Int128
    /// When `credit` was last brought up to date, in nanoseconds; `nil` until the first reservation (the bucket
    /// starts full).
    private var updated: Int128?

    private static let nanobitsPerByte: Int128 = 8_000_000_000

    /// A bucket for a rate in bits per second (at least 1) and a depth in bytes (at least 1); it starts full.
    package init(rateBitsPerSecond: Int, burstBytes: Int) {
        self.rateBitsPerSecond = max(rateBitsPerSecond, 1)
        self.burstBytes = max(burstBytes, 1)
        credit = Int128(self.burstBytes) * Self.nanobitsPerByte
    }

    /// The bytes reserved but not yet due at `now` (rounded up to whole bytes).
    package func backlog(at now: Duration) -> Int {
        let available = credit(at: Self.nanoseconds(now))
        guard available < 0 else { return 0 }
        return Int((-available + Self.nanobitsPerByte - 1) / Self.nanobitsPerByte)
    }

    /// Reserves `bytes` at `now` and returns their departure time (`now` itself when there is credit).
    ///
    /// With `backlogLimit`, a reservation that would leave more than that many bytes waiting is refused (the
    /// bucket keeps its credit) and `nil` is returned: a byte-limited queue in front of the shaper whose overflow
    /// is dropped.
    package mutating func reserve(_ bytes: Int, at now: Duration, backlogLimit: Int? = nil) -> Duration? {
        let time = Self.nanoseconds(now)
        let available = credit(at: time)
        let after = available - Int128(max(bytes, 0)) * Self.nanobitsPerByte
        updated = max(updated ?? time, time)
        if let backlogLimit, after < -Int128(backlogLimit) * Self.nanobitsPerByte {
            credit = available
            return nil
        }
        credit = after
        guard after < 0 else { return now }
        let rate = Int128(rateBitsPerSecond)
        let wait = (-after + rate - 1) / rate
        return now + .nanoseconds(Int64(clamping: wait))
    }

    /// The credit at `time` (nanoseconds): the stored credit plus the refill since `updated`, capped at the burst.
    private func credit(at time: Int128) -> Int128 {
        let full = Int128(burstBytes) * Self.nanobitsPerByte
        guard let updated, time > updated else { return credit }
        let refill = (time - updated) * Int128(rateBitsPerSecond)
        return min(full, credit + refill)
    }

    /// A duration in whole nanoseconds (sub-nanosecond parts are dropped).
    private static func nanoseconds(_ duration: Duration) -> Int128 {
        let parts = duration.components
        return Int128(parts.seconds) * 1_000_000_000 + Int128(parts.attoseconds / 1_000_000_000)
    }
}
