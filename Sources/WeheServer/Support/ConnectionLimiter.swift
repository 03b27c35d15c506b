import Synchronization

/// One connection budget for every TCP listener of the server: a global cap, a share of it per kind of listener,
/// a cap per client address, and for the analyzer and the dashboard caps per address and per network within their
/// shares. A connection over any of them is closed at once by its listener, unless an evictable connection (one
/// with no request in progress) can make way for it. The shares keep one kind of connection (idle side channels,
/// slow analyzer requests) from taking the slots of the others; the per-address and per-network caps keep a few
/// addresses from taking every slot of a share; eviction keeps connections that ask nothing from holding any.
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

    private struct Evictable {
        let id: UInt64
        let address: String
        let network: String
    }

    private struct Counts {
        var total = 0
        var byPool: [Pool: Int] = [:]
        var byAddress: [String: Int] = [:]
        /// Connections per pool and client address, and per pool and client network (/24, /64), for the pools with
        /// their own caps.
        var byPoolAddress: [Pool: [String: Int]] = [:]
        var byPoolNetwork: [Pool: [String: Int]] = [:]
        var nextTicket: UInt64 = 1
        /// Connections with a ticket whose slot is still held, with their close.
        var live: [UInt64: @Sendable () -> Void] = [:]
        /// Per pool, oldest first: connections that may be evicted now (no complete request yet, or idle between
        /// two requests).
        var evictable: [Pool: [Evictable]] = [:]

        /// Removes the slot of a ticket; its close when it was live.
        mutating func remove(id: UInt64, address: String, network: String, pool: Pool) -> (@Sendable () -> Void)? {
            evictable[pool]?.removeAll { $0.id == id }
            guard let close = live.removeValue(forKey: id) else { return nil }
            total -= 1
            byPool[pool, default: 1] -= 1
            Self.decrement(&byAddress, address)
            if byPoolAddress[pool] != nil { Self.decrement(&byPoolAddress[pool, default: [:]], address) }
            if byPoolNetwork[pool] != nil { Self.decrement(&byPoolNetwork[pool, default: [:]], network) }
            return close
        }

        /// Evicts the oldest evictable connection of `pool` that `matching` accepts; its close.
        mutating func evictOldest(_ pool: Pool, matching: (Evictable) -> Bool) -> (@Sendable () -> Void)? {
            guard let oldest = evictable[pool]?.first(where: matching) else { return nil }
            return remove(id: oldest.id, address: oldest.address, network: oldest.network, pool: pool)
        }

        static func decrement(_ table: inout [String: Int], _ key: String) {
            let left = table[key, default: 1] - 1
            table[key] = left > 0 ? left : nil
        }
    }

    /// The slot of one connection taken with `admit`; released once with `release(_:)`.
    package struct Ticket: Sendable, Hashable {
        let id: UInt64
        let address: String
        let network: String
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

    /// The caps of one client address and one client network (/24, /64) in `pool`, for the pools that have their
    /// own (the analyzer and the dashboard: an eighth and a quarter of the share); `nil` for the others, whose
    /// sessions are capped per network by admission.
    package func caps(_ pool: Pool) -> (address: Int, network: Int)? {
        switch pool {
        case .side, .replay: return nil
        case .analyzer, .dashboard:
            let share = share(pool)
            let address = max(2, share / 8)
            return (address, max(address, share / 4))
        }
    }

    /// Takes a slot for a connection that may be evicted while it is waiting for its first complete request, and
    /// again whenever `idle(_:)` says it waits for the next one: when the pool or the budget is full, the oldest
    /// evictable connection of the pool is closed and its slot goes to this one, so connections that hold a slot
    /// without asking anything (or between requests) cannot keep real requests out. An address or network at its
    /// cap in the pool (`caps(_:)`) replaces its own oldest evictable connection the same way. `nil` when a cap is
    /// reached and nothing can be evicted (nothing taken).
    package func admit(address: String, pool: Pool, close: @escaping @Sendable () -> Void) -> Ticket? {
        let share = share(pool)
        let caps = caps(pool)
        let network = AddressText.network(address)
        var evicted: [@Sendable () -> Void] = []
        let ticket: Ticket? = counts.withLock { counts in
            guard counts.byAddress[address, default: 0] < maximumPerAddress else { return nil }
            if let caps {
                if counts.byPoolAddress[pool]?[address] ?? 0 >= caps.address {
                    guard let close = counts.evictOldest(pool, matching: { $0.address == address }) else { return nil }
                    evicted.append(close)
                }
                if counts.byPoolNetwork[pool]?[network] ?? 0 >= caps.network {
                    guard let close = counts.evictOldest(pool, matching: { $0.network == network }) else { return nil }
                    evicted.append(close)
                }
            }
            if counts.total >= maximum || counts.byPool[pool, default: 0] >= share {
                guard let close = counts.evictOldest(pool, matching: { _ in true }) else { return nil }
                evicted.append(close)
            }
            let ticket = Ticket(id: counts.nextTicket, address: address, network: network, pool: pool)
            counts.nextTicket += 1
            counts.total += 1
            counts.byPool[pool, default: 0] += 1
            counts.byAddress[address, default: 0] += 1
            if caps != nil {
                counts.byPoolAddress[pool, default: [:]][address, default: 0] += 1
                counts.byPoolNetwork[pool, default: [:]][network, default: 0] += 1
            }
            counts.live[ticket.id] = close
            counts.evictable[pool, default: []].append(Evictable(id: ticket.id, address: address, network: network))
            return ticket
        }
        for close in evicted { close() }
        return ticket
    }

    /// The connection sent a complete request: it is not evicted for others until `idle(_:)`.
    package func established(_ ticket: Ticket) {
        counts.withLock { counts in counts.evictable[ticket.pool]?.removeAll { $0.id == ticket.id } }
    }

    /// The connection answered every request it sent and waits for the next one: it may be evicted again, after
    /// the connections that became evictable before it.
    package func idle(_ ticket: Ticket) {
        counts.withLock { counts in
            guard counts.live[ticket.id] != nil else { return }
            var queue = counts.evictable[ticket.pool, default: []]
            guard !queue.contains(where: { $0.id == ticket.id }) else { return }
            queue.append(Evictable(id: ticket.id, address: ticket.address, network: ticket.network))
            counts.evictable[ticket.pool] = queue
        }
    }

    /// Returns the slot of a ticket (nothing when it was already given to another connection by eviction).
    package func release(_ ticket: Ticket) {
        _ = counts.withLock { counts in
            counts.remove(id: ticket.id, address: ticket.address, network: ticket.network, pool: ticket.pool)
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
