import NIOCore
import Synchronization

/// The connections a TCP listener has set up that its accept loop has not taken yet (plain channels).
/// When the loop ends they are closed, and so is any set up after that.
final class QueuedConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var closed = false
    }
    private let state = Mutex(State())

    /// A connection set up by the listener (on its event loop); forgotten once it closes.
    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let closed = state.withLock { state in
            if !state.closed { state.channels[id] = channel }
            return state.closed
        }
        if closed {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.channels.removeValue(forKey: id) } }
    }

    /// The accept loop took the connection: it is the loop's to close.
    func take(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { _ = $0.channels.removeValue(forKey: id) }
    }

    /// Closes the connections not taken, and every connection added from now on.
    func closeAll() {
        let left = state.withLock { state in
            state.closed = true
            defer { state.channels.removeAll() }
            return Array(state.channels.values)
        }
        for channel in left { channel.close(promise: nil) }
    }
}
