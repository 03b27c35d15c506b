import Synchronization

/// Counts open connections against a global cap and a per-address cap; a connection over either cap is closed at
/// once by its listener. The per-address cap keeps one address from taking every slot with idle connections.
package final class ConnectionLimiter: Sendable {
    private struct Counts {
        var total = 0
        var byAddress: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    /// The global cap.
    package let maximum: Int
    /// The cap per client address.
    package let maximumPerAddress: Int

    /// Creates a limiter.
    package init(maximum: Int, maximumPerAddress: Int) {
        self.maximum = maximum
        self.maximumPerAddress = maximumPerAddress
    }

    /// Takes a slot for a connection from `address`; `false` when a cap is reached (nothing taken).
    package func acquire(address: String) -> Bool {
        counts.withLock { counts in
            let forAddress = counts.byAddress[address, default: 0]
            guard counts.total < maximum, forAddress < maximumPerAddress else { return false }
            counts.total += 1
            counts.byAddress[address] = forAddress + 1
            return true
        }
    }

    /// Returns the slot of a connection from `address`.
    package func release(address: String) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byAddress[address, default: 1] - 1
            counts.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections open now.
    package var current: Int { counts.withLock { $0.total } }
}
