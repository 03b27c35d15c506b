import Synchronization

/// A clock that only moves when told to, or when someone sleeps on it: `sleep(until:)` jumps the time forward to the
/// deadline at once. The replay engine and the in-memory transport run on one task, so this gives deterministic
/// virtual time: a 40-second trace replays in milliseconds.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = Mutex(Instant(offset: .zero))
    private let sleeps = Mutex<[Duration]>([])

    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .nanoseconds(1) }

    /// The deadlines every sleep asked for, in order.
    var sleepDeadlines: [Duration] { sleeps.withLock { $0 } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
        sleeps.withLock { $0.append(deadline.offset) }
        advance(to: deadline)
        await Task.yield()
        try Task.checkCancellation()
    }

    func advance(by duration: Duration) {
        current.withLock { $0 = $0.advanced(by: duration) }
    }

    func advance(to instant: Instant) {
        current.withLock { if instant > $0 { $0 = instant } }
    }
}
