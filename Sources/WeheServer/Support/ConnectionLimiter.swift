import Synchronization

/// Counts open connections against a cap; a connection over the cap is closed at once by its listener.
package final class ConnectionLimiter: Sendable {
    private let open = Atomic<Int>(0)
    /// The cap.
    package let maximum: Int

    /// Creates a limiter.
    package init(maximum: Int) { self.maximum = maximum }

    /// Takes a slot; `false` when the cap is reached (nothing taken).
    package func acquire() -> Bool {
        let now = open.wrappingAdd(1, ordering: .relaxed).newValue
        if now > maximum {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Returns a slot.
    package func release() { open.wrappingSubtract(1, ordering: .relaxed) }

    /// Connections open now.
    package var current: Int { open.load(ordering: .relaxed) }
}
