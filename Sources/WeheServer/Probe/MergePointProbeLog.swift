import Synchronization
import WeheCore

/// The merge-point probe delays of one replay (`MergePointProber`), in seconds; `nil` where no answer came within
/// the prober's timeout.
struct MergePointProbeRecord: Sendable, Hashable {
    /// TTL of the probes to the merge point (the configured hop count).
    var mergeTTL: Int
    /// In-flow copies expiring at the merge point (ICMP time exceeded).
    var flowToMergePoint: [Double?] = []
    /// Out-of-flow UDP datagrams with the same TTL.
    var baselineToMergePoint: [Double?] = []
    /// In-flow copies with the segment's own TTL, answered by the client's D-SACK.
    var flowToClient: [Double?] = []
    /// UDP datagrams to a closed port of the client (port unreachable).
    var baselineToClient: [Double?] = []
    /// Why probing stopped early or did not run, if it did.
    var note: String?
}

/// The probe records of recent replays, in memory: at most `capacity` (oldest forgotten first). A localization asks
/// for them within minutes of its replays; they are not kept across restarts.
final class MergePointProbeLog: Sendable {
    private struct State {
        var records: [ReplayKey: MergePointProbeRecord] = [:]
        var order: [ReplayKey] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int = 512) {
        self.capacity = capacity
    }

    /// Keeps `record` for `key` (replacing an earlier one).
    func save(_ record: MergePointProbeRecord, for key: ReplayKey) {
        state.withLock { state in
            if state.records.updateValue(record, forKey: key) == nil { state.order.append(key) }
            while state.order.count > capacity {
                state.records[state.order.removeFirst()] = nil
            }
        }
    }

    /// The record of `key`, if kept.
    func record(_ key: ReplayKey) -> MergePointProbeRecord? {
        state.withLock { $0.records[key] }
    }
}
