import Synchronization

/// The live, lock-protected counters behind ``ThrottlingProxyStatistics``.
package final class StatisticsCounters: Sendable {
    private let counters = Mutex(ThrottlingProxyStatistics())

    /// Creates zeroed counters.
    package init() {}

    /// A copy of the counters now.
    package var snapshot: ThrottlingProxyStatistics { counters.withLock { $0 } }

    /// Applies `change` under the lock.
    package func update(_ change: (inout ThrottlingProxyStatistics) -> Void) {
        counters.withLock { change(&$0) }
    }

    /// Counts one relayed piece with its plan.
    package func relayed(_ plan: FlowShaper.Plan, direction: FlowDirection, isDatagram: Bool) {
        counters.withLock { stats in
            if plan.departure == nil {
                if plan.lost { stats.lostDatagrams += 1 } else { stats.queueDrops += 1 }
                return
            }
            if plan.lost && !isDatagram { stats.stalledPieces += 1 }
            if plan.shaped { stats.shapedBytes += plan.length }
            switch direction {
            case .download: stats.downloadBytes += plan.length
            case .upload: stats.uploadBytes += plan.length
            }
        }
    }
}
