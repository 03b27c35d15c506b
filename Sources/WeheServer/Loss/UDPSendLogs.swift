import Foundation
import Synchronization
import WeheCore
import WeheStore
import WeheWire

/// What the server sent on its UDP replay streams, kept in memory until the client reports which datagrams arrived
/// (`DatagramReceipt`); the two together are the replay's loss timeline. UDP has no acknowledgements, so this is the
/// UDP counterpart of sampling `TCP_INFO` on a TCP replay socket.
///
/// Bounded: at most `capacity` logs, each kept for `lifetime`; the oldest go first. A log is forgotten once its report
/// is stored, so later reports about it are refused.
final class UDPSendLogs: Sendable {
    /// One stream: per datagram, when it left (seconds since the stream's first datagram), its size and digest.
    struct Log: Sendable, Hashable {
        var key: ReplayKey
        /// The client address the stream went to; only that address may report on it.
        var clientAddress: String
        var sentAt: [Double]
        var sizes: [Int]
        var digests: [UInt32]
        /// Smallest RTT of the session's side channel (same client, same path), seconds.
        var minimumRTT: Double?
        var finished: ContinuousClock.Instant = .now
    }

    /// Why a report was not turned into a loss timeline.
    enum Refusal: Error, Equatable {
        case unknownReplay
        case otherAddress
        case mismatch(unmatched: Int, received: Int)

        var message: String {
            switch self {
            case .unknownReplay:
                "No UDP stream of this replay is waiting for a report (unknown, already reported, or expired)"
            case .otherAddress: "The report must come from the address the stream went to"
            case .mismatch(let unmatched, let received):
                "The report does not match what this server sent (\(unmatched) of \(received) digests unknown)"
            }
        }
    }

    private let capacity: Int
    private let lifetime: Duration
    private let logs = Mutex<[ReplayKey: Log]>([:])

    init(capacity: Int = 512, lifetime: Duration = .seconds(600)) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// Keeps `log` (replacing an earlier one of the same replay).
    func put(_ log: Log) {
        logs.withLock { logs in
            Self.expire(&logs, lifetime: lifetime)
            logs[log.key] = log
            while logs.count > capacity, let oldest = logs.values.min(by: { $0.finished < $1.finished }) {
                logs[oldest.key] = nil
            }
        }
    }

    /// Number of logs waiting.
    var count: Int { logs.withLock { $0.count } }

    /// Turns the client's report into the replay's loss record. The log stays until `forget(_:)` (called once the
    /// record is stored, so a store failure loses nothing and the client may report again).
    /// - Parameters:
    ///   - received: digests of the datagrams the client received, in arrival order.
    ///   - clientAddress: the report's source address.
    /// - Returns: the record, every sent datagram one reading (lost bytes are those of datagrams that never arrived).
    /// - Throws: `Refusal` when no log waits for `key`, the address differs, or more than a tenth of the digests
    ///   match nothing that was sent (then the log stays for a correct report).
    func report(
        _ key: ReplayKey,
        received: [UInt32],
        from clientAddress: String,
        recordedAt: Date
    ) throws(Refusal) -> ReplayLossRecord {
        let log: Log = try logs.withLock { logs throws(Refusal) -> Log in
            Self.expire(&logs, lifetime: lifetime)
            guard let log = logs[key] else { throw .unknownReplay }
            guard log.clientAddress == clientAddress else { throw .otherAddress }
            let (_, unmatched) = DatagramReceipt.delivered(sent: log.digests, received: received)
            guard unmatched * 10 <= received.count else {
                throw .mismatch(unmatched: unmatched, received: received.count)
            }
            return log
        }
        return Self.record(log, received: received, recordedAt: recordedAt)
    }

    /// Forgets the log of `key` (its report is stored).
    func forget(_ key: ReplayKey) {
        logs.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// The loss record of `log` given the received digests.
    static func record(_ log: Log, received: [UInt32], recordedAt: Date) -> ReplayLossRecord {
        let (delivered, _) = DatagramReceipt.delivered(sent: log.digests, received: received)
        var samples: [ReplayLossRecord.Sample] = []
        samples.reserveCapacity(min(log.sentAt.count, ReplayLossRecord.maximumSamples))
        var last = 0.0
        for index in log.sentAt.indices.prefix(ReplayLossRecord.maximumSamples) {
            let time = max(last, log.sentAt[index])
            let size = Double(log.sizes[index])
            samples.append(.init(time: time, bytesSent: size, bytesLost: delivered[index] ? 0 : size))
            last = time
        }
        return ReplayLossRecord(
            key: log.key, source: .clientReport, recordedAt: recordedAt, minimumRTT: log.minimumRTT,
            duration: samples.last?.time ?? 0, samples: samples)
    }

    private static func expire(_ logs: inout [ReplayKey: Log], lifetime: Duration) {
        let now = ContinuousClock.now
        logs = logs.filter { $0.value.finished.duration(to: now) <= lifetime }
    }
}
