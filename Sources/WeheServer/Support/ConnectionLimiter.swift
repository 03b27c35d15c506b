import Synchronization

/// One connection budget for every TCP listener of the server: a global cap, a share of it per kind of listener,
/// and a cap per client address. A connection over any of them is closed at once by its listener. The shares keep
/// one kind of connection (idle side channels, slow analyzer requests) from taking the slots of the others; the
/// per-address cap keeps one address from taking every slot.
package final class ConnectionLimiter: Sendable {
    /// The kinds of listener, each with its share of the budget.
    package enum Pool: String, Sendable, CaseIterable {
        /// Side channels (TLS and plain): 45 %.
        case side
        /// TCP replay connections (and `WHATSMYIPMAN`): 45 %.
        case replay
        /// Analyzer HTTPS and HTTP: 7 %.
        case analyzer
        /// The operator dashboard: 3 %.
        case dashboard

        var percent: Int {
            switch self {
            case .side, .replay: 45
            case .analyzer: 7
            case .dashboard: 3
            }
        }
    }

    private struct Counts {
        var total = 0
        var byPool: [Pool: Int] = [:]
        var byAddress: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    /// The global cap (the connection budget).
    package let maximum: Int
    /// The cap per client address.
    package let maximumPerAddress: Int

    /// Creates a limiter.
    package init(maximum: Int, maximumPerAddress: Int) {
        self.maximum = maximum
        self.maximumPerAddress = maximumPerAddress
    }

    /// The connections a pool may hold at once (at least one).
    package func share(_ pool: Pool) -> Int { max(1, maximum * pool.percent / 100) }

    /// Takes a slot for a connection from `address` in `pool`; `false` when a cap is reached (nothing taken).
    package func acquire(address: String, pool: Pool = .side) -> Bool {
        let share = share(pool)
        return counts.withLock { counts in
            let forAddress = counts.byAddress[address, default: 0]
            let forPool = counts.byPool[pool, default: 0]
            guard counts.total < maximum, forPool < share, forAddress < maximumPerAddress else { return false }
            counts.total += 1
            counts.byPool[pool] = forPool + 1
            counts.byAddress[address] = forAddress + 1
            return true
        }
    }

    /// Returns the slot of a connection from `address` in `pool`.
    package func release(address: String, pool: Pool = .side) {
        counts.withLock { counts in
            counts.total -= 1
            counts.byPool[pool, default: 1] -= 1
            let left = counts.byAddress[address, default: 1] - 1
            counts.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections open now.
    package var current: Int { counts.withLock { $0.total } }

    /// Connections open now in one pool.
    package func current(_ pool: Pool) -> Int { counts.withLock { $0.byPool[pool, default: 0] } }
}
