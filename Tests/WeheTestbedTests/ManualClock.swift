import Synchronization

/// A clock that moves only when a test advances it, and that tells the test when someone sleeps on it.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Sleeper] = []
        var cancelled: Set<Int> = []
        var watchers: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    /// The elapsed time since the clock was created.
    var elapsed: Duration { now.offset }

    /// The deadlines of the current sleepers, earliest first.
    var pendingDeadlines: [Duration] { state.withLock { $0.sleepers.map(\.deadline.offset).sorted() } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (false, []) }
                    if deadline <= state.now { return (true, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    defer { state.watchers = [] }
                    return (nil, state.watchers)
                }
                switch resumeNow {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: for watcher in watchers { watcher.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        advance(to: now.offset + duration)
    }

    /// Moves time to `elapsed` (never backwards) and wakes the sleepers that are due.
    func advance(to elapsed: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = Instant(offset: max(state.now.offset, elapsed))
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits until at least one task sleeps on the clock and returns the earliest deadline; `nil` when the
    /// waiting task is cancelled.
    func nextDeadline() async -> Duration? {
        while !Task.isCancelled {
            if let earliest = pendingDeadlines.first { return earliest }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if !state.sleepers.isEmpty || Task.isCancelled { return true }
                        state.watchers.append(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                let watchers = state.withLock { state in
                    defer { state.watchers = [] }
                    return state.watchers
                }
                for watcher in watchers { watcher.resume() }
            }
        }
        return nil
    }
}
