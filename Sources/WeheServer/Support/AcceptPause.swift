import Synchronization

/// A seam for tests: while held, the accept loops of the TCP listeners (side channel, replay ports) wait before they
/// take their first connection, so accepted connections stay queued in the listeners' accept streams. A test uses it
/// to shut the server down with connections in that state (the shutdown crash under load). Never held
/// unless a test holds it; a waiting loop goes on when released or when its task is cancelled.
package final class AcceptPause: Sendable {
    private struct State {
        var held = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    /// Creates a seam that is not held.
    package init() {}

    /// Holds the accept loops that have not yet taken a connection.
    package func hold() {
        state.withLock { $0.held = true }
    }

    /// Lets every waiting accept loop go on.
    package func release() {
        let waiters = state.withLock { state in
            state.held = false
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at once unless held; then when released or when the calling task is cancelled.
    func wait() async {
        let id: Int? = state.withLock { state in
            guard state.held else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if !state.held || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
