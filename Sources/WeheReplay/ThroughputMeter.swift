import Synchronization
public import WeheCore

/// Counts received bytes into fixed intervals of a replay (analysis.md section 1).
///
/// Bytes are attributed to the interval in which they arrive, measured on the engine's injected clock from the
/// replay start: interval `k` (0-based) covers `[k·Δ, (k+1)·Δ)`. This is the ideal form of the published clients'
/// periodic timer: no leading empty sample (the Java timer's first firing at t = 0 is not copied), and no bytes are
/// lost to timer jitter. When the replay ends, the interval in progress becomes a last, partial sample (as the iOS
/// client does); the server drops that last sample.
///
/// Transports call `add(_:)` from any thread (an event loop, a receiver task); it takes a lock for a few
/// instructions only.
public final class ThroughputMeter: Sendable {
    /// The most intervals kept; bytes after that are counted into the last one (45 s at 1 ms would need 45 000).
    public static let maximumIntervals = 200_000

    private struct State {
        var buckets: [Int] = []
        var received = 0
        var sent = 0
        var packetsSent = 0
        var lastReportedInterval = -1
        var lastArrival: Duration?
    }

    /// The interval length Δ.
    public let interval: Duration
    /// Packets of the trace (for progress reports).
    public let totalPackets: Int
    /// Response bytes the trace expects in total (0 for UDP, whose server datagrams are not in the client file).
    public let expectedBytes: Int
    private let elapsed: @Sendable () -> Duration
    private let onProgress: (@Sendable (ReplayProgress) -> Void)?
    private let state = Mutex(State())

    /// Creates a meter.
    /// - Parameters:
    ///   - interval: Δ, the sample interval (must be positive).
    ///   - totalPackets: packets in the trace, for progress reports.
    ///   - expectedBytes: response bytes expected, for progress reports.
    ///   - elapsed: time since the replay started, on the engine's clock.
    ///   - onProgress: called once per completed interval (from whichever thread added the bytes).
    public init(
        interval: Duration,
        totalPackets: Int = 0,
        expectedBytes: Int = 0,
        elapsed: @escaping @Sendable () -> Duration,
        onProgress: (@Sendable (ReplayProgress) -> Void)? = nil
    ) {
        self.interval = interval > .zero ? interval : .milliseconds(1)
        self.totalPackets = totalPackets
        self.expectedBytes = expectedBytes
        self.elapsed = elapsed
        self.onProgress = onProgress
    }

    /// Counts `bytes` received now.
    public func add(_ bytes: Int) {
        add(bytes, at: elapsed())
    }

    /// Counts `bytes` received at `time` after the replay start (test transports schedule arrivals explicitly).
    public func add(_ bytes: Int, at time: Duration) {
        guard bytes > 0 else { return }
        let index = intervalIndex(time)
        let report = state.withLock { state -> ReplayProgress? in
            if state.buckets.count <= index {
                state.buckets.append(contentsOf: repeatElement(0, count: index + 1 - state.buckets.count))
            }
            state.buckets[index] += bytes
            state.received += bytes
            state.lastArrival = max(state.lastArrival ?? time, time)
            return progressIfIntervalClosed(&state, index: index, time: time)
        }
        if let report { onProgress?(report) }
    }

    /// Records a packet the engine sent.
    public func recordSent(_ bytes: Int) {
        let time = elapsed()
        let index = intervalIndex(time)
        let report = state.withLock { state -> ReplayProgress? in
            state.sent += bytes
            state.packetsSent += 1
            return progressIfIntervalClosed(&state, index: index, time: time)
        }
        if let report { onProgress?(report) }
    }

    /// Response bytes received so far.
    public var receivedBytes: Int { state.withLock { $0.received } }
    /// Payload bytes sent so far.
    public var sentBytes: Int { state.withLock { $0.sent } }
    /// When the last received bytes arrived, from the replay start; `nil` before any. The samples say only in which
    /// interval they came: a replay that crosses a fast path in a few intervals needs the instant to be measured
    /// without steps of a whole interval.
    public var lastArrival: Duration? { state.withLock { $0.lastArrival } }

    /// A progress snapshot now.
    public func progress() -> ReplayProgress {
        let time = elapsed()
        let index = intervalIndex(time)
        return state.withLock { snapshot($0, time: time, completedInterval: index - 1) }
    }

    /// The samples of a replay that ended at `end`: one per interval up to and including the one in progress at
    /// `end`, in Mbit/s (`bytes / 125000 / Δ`), stamped `Δ, 2Δ, …`.
    public func series(endingAt end: Duration) -> ThroughputSeries {
        measured(endingAt: end).samples
    }

    /// `series(endingAt:)` and `lastArrival` from one moment: bytes still arriving (responses in flight when a
    /// replay ends early) are in both or in neither.
    public func measured(endingAt end: Duration) -> (samples: ThroughputSeries, lastArrival: Duration?) {
        let last = intervalIndex(end)
        let seconds = interval.inSeconds
        let (buckets, lastArrival) = state.withLock { ($0.buckets, $0.lastArrival) }
        let count = max(last + 1, buckets.count)
        var mbps: [Double] = []
        mbps.reserveCapacity(count)
        for index in 0..<count {
            let bytes = index < buckets.count ? buckets[index] : 0
            mbps.append(Double(bytes) / 125_000 / seconds)
        }
        return (ThroughputSeries(mbps: mbps, interval: seconds), lastArrival)
    }

    private func intervalIndex(_ time: Duration) -> Int {
        guard time > .zero else { return 0 }
        let ratio = time / interval
        guard ratio.isFinite else { return Self.maximumIntervals - 1 }
        return min(Int(ratio.rounded(.down)), Self.maximumIntervals - 1)
    }

    private func progressIfIntervalClosed(_ state: inout State, index: Int, time: Duration) -> ReplayProgress? {
        guard onProgress != nil, index - 1 > state.lastReportedInterval else { return nil }
        state.lastReportedInterval = index - 1
        return snapshot(state, time: time, completedInterval: index - 1)
    }

    private func snapshot(_ state: State, time: Duration, completedInterval: Int) -> ReplayProgress {
        let bytes =
            completedInterval >= 0 && completedInterval < state.buckets.count ? state.buckets[completedInterval] : 0
        return ReplayProgress(
            elapsed: time,
            bytesReceived: state.received,
            bytesSent: state.sent,
            packetsSent: state.packetsSent,
            totalPackets: totalPackets,
            expectedBytes: expectedBytes,
            currentMbps: Double(bytes) / 125_000 / interval.inSeconds
        )
    }
}

/// A snapshot of a running replay, for progress displays.
public struct ReplayProgress: Sendable, Hashable {
    /// Time since the replay started.
    public var elapsed: Duration
    /// Response bytes received so far.
    public var bytesReceived: Int
    /// Payload bytes sent so far.
    public var bytesSent: Int
    /// Packets sent so far.
    public var packetsSent: Int
    /// Packets in the trace.
    public var totalPackets: Int
    /// Response bytes the trace expects (0 when unknown, as for UDP).
    public var expectedBytes: Int
    /// Throughput of the last completed interval, Mbit/s.
    public var currentMbps: Double

    /// Creates a snapshot.
    public init(
        elapsed: Duration,
        bytesReceived: Int,
        bytesSent: Int,
        packetsSent: Int,
        totalPackets: Int,
        expectedBytes: Int,
        currentMbps: Double
    ) {
        self.elapsed = elapsed
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
        self.packetsSent = packetsSent
        self.totalPackets = totalPackets
        self.expectedBytes = expectedBytes
        self.currentMbps = currentMbps
    }

    /// Fraction done in [0, 1]: by response bytes when the trace says how many, else by packets sent.
    public var fractionDone: Double {
        if expectedBytes > 0 { return min(1, Double(bytesReceived) / Double(expectedBytes)) }
        guard totalPackets > 0 else { return 0 }
        return min(1, Double(packetsSent) / Double(totalPackets))
    }
}

extension Duration {
    /// The duration in seconds as a `Double`.
    public var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
