/// An injected `Clock` reduced to what the relays need: the elapsed time since the proxy was created, and a
/// sleep until a given elapsed time. Opening the clock once here keeps the relays free of generics.
package struct ElapsedClock: Sendable {
    /// The elapsed time now.
    package let now: @Sendable () -> Duration
    /// Sleeps until the elapsed time reaches the argument (returns at once when it already has).
    package let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Wraps `clock`, taking its current instant as the origin.
    package init(_ clock: any Clock<Duration>) {
        self = Self.wrap(clock)
    }

    private init(
        now: @escaping @Sendable () -> Duration, sleepUntil: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.now = now
        self.sleepUntil = sleepUntil
    }

    private static func wrap<C: Clock<Duration>>(_ clock: C) -> ElapsedClock {
        let origin = clock.now
        return ElapsedClock(
            now: { origin.duration(to: clock.now) },
            sleepUntil: { elapsed in
                let deadline = origin.advanced(by: elapsed)
                guard clock.now < deadline else { return }
                try await clock.sleep(until: deadline, tolerance: nil)
            }
        )
    }
}
