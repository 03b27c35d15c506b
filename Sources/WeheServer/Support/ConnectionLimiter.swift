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
        var nextTicket: UInt64 = 1
        /// Connections with a ticket whose slot is still held.
        var live: Set<UInt64> = []
        /// Per pool, oldest first: connections that have not yet sent a complete request, with their close.
        var waiting: [Pool: [(id: UInt64, address: String, close: @Sendable () -> Void)]] = [:]
    }

    /// The slot of one connection taken with `admit`; released once with `release(_:)`.
    package struct Ticket: Sendable, Hashable {
        let id: UInt64
        let address: String
        let pool: Pool
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

    /// Takes a slot for a connection that may be evicted while it is waiting (it has not sent a complete request):
    /// when the pool or the budget is full, the oldest waiting connection of the pool is closed and its slot goes to
    /// this one, so connections that hold a slot without ever asking anything cannot keep real requests out. `nil`
    /// when the per-address cap is reached or nothing can be evicted (nothing taken).
    package func admit(address: String, pool: Pool, close: @escaping @Sendable () -> Void) -> Ticket? {
        let share = share(pool)
        var evicted: (@Sendable () -> Void)?
        let ticket: Ticket? = counts.withLock { counts in
            let forAddress = counts.byAddress[address, default: 0]
            guard forAddress < maximumPerAddress else { return nil }
            if counts.total >= maximum || counts.byPool[pool, default: 0] >= share {
                guard var queue = counts.waiting[pool], !queue.isEmpty else { return nil }
                let oldest = queue.removeFirst()
                counts.waiting[pool] = queue
                counts.live.remove(oldest.id)
                counts.total -= 1
                counts.byPool[pool, default: 1] -= 1
                let left = counts.byAddress[oldest.address, default: 1] - 1
                counts.byAddress[oldest.address] = left > 0 ? left : nil
                evicted = oldest.close
            }
            let ticket = Ticket(id: counts.nextTicket, address: address, pool: pool)
            counts.nextTicket += 1
            counts.total += 1
            counts.byPool[pool, default: 0] += 1
            counts.byAddress[address, default: 0] += 1
            counts.live.insert(ticket.id)
            counts.waiting[pool, default: []].append((ticket.id, address, close))
            return ticket
        }
        evicted?()
        return ticket
    }

    /// The connection sent a complete request: it is no longer evicted for others.
    package func established(_ ticket: Ticket) {
        counts.withLock { counts in counts.waiting[ticket.pool]?.removeAll { $0.id == ticket.id } }
    }

    /// Returns the slot of a ticket (nothing when it was already given to another connection by eviction).
    package func release(_ ticket: Ticket) {
        counts.withLock { counts in
            counts.waiting[ticket.pool]?.removeAll { $0.id == ticket.id }
            guard counts.live.remove(ticket.id) != nil else { return }
            counts.total -= 1
            counts.byPool[ticket.pool, default: 1] -= 1
            let left = counts.byAddress[ticket.address, default: 1] - 1
            counts.byAddress[ticket.address] = left > 0 ? left : nil
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
