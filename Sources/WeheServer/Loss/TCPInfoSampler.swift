import Foundation
import NIOCore
import Synchronization
import WeheCore
import WeheStore

/// Samples the kernel's TCP statistics of one replay connection at a fixed period and turns the readings into the
/// replay's loss timeline (`ReplayLossRecord`): no packet capture, no privileges.
///
/// Time 0 is when the sampler starts (the connection was accepted), so timelines of two servers line up by each
/// replay's own start, whatever their wall clocks say. Readings are taken on the channel's event loop.
final class TCPInfoSampler: Sendable {
    /// A reading and when it was taken (seconds since the start).
    struct Timed: Sendable, Hashable {
        var time: Double
        var reading: TCPInfoReading
    }

    private struct State {
        var readings: [Timed] = []
        var task: RepeatedTask?
        var unavailable = false
    }

    private let channel: any Channel
    private let start: ContinuousClock.Instant
    private let maximumReadings: Int
    private let state = Mutex(State())

    /// Starts sampling `channel` every `period` (at most `maximumReadings` readings are kept).
    init(channel: any Channel, period: Duration, maximumReadings: Int = ReplayLossRecord.maximumSamples) {
        self.channel = channel
        self.start = .now
        self.maximumReadings = maximumReadings
        guard TCPInfoReading.isSupported else {
            state.withLock { $0.unavailable = true }
            return
        }
        let task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: TimeAmount(period)) {
            [weak self] task in
            guard let self else {
                task.cancel()
                return
            }
            self.sample(cancelling: task)
        }
        state.withLock { $0.task = task }
    }

    /// Whether the platform offered no `TCP_INFO` for this socket.
    var isUnavailable: Bool { state.withLock { $0.unavailable } }

    /// The readings so far.
    var readings: [Timed] { state.withLock { $0.readings } }

    private func sample(cancelling task: RepeatedTask?) {
        let time = Self.seconds(start.duration(to: .now))
        TCPInfoReading.read(channel).whenComplete { [self] result in
            state.withLock { state in
                switch result {
                case .success(let reading?):
                    if state.readings.count < maximumReadings {
                        state.readings.append(Timed(time: time, reading: reading))
                    }
                case .success(nil):
                    state.unavailable = true
                    task?.cancel()
                case .failure:
                    // The socket is closing: keep what was read.
                    task?.cancel()
                }
            }
        }
    }

    /// Takes a last reading (while the connection is still open), stops sampling and returns every reading.
    func finish() async -> [Timed] {
        let task = state.withLock { state -> RepeatedTask? in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        if task != nil {
            // On the event loop the reading completes inside `sample`, so the readings are complete afterwards.
            try? await channel.eventLoop.submit { self.sample(cancelling: nil) }.get()
        }
        return readings
    }

    /// The loss record of `key` from `readings`, or `nil` when there is nothing to record.
    static func record(key: ReplayKey, readings: [Timed], recordedAt: Date) -> ReplayLossRecord? {
        guard !readings.isEmpty else { return nil }
        let samples = Self.samples(readings)
        let minimum =
            readings.compactMap(\.reading.minimumRTTMicroseconds).min()
            ?? readings.compactMap(\.reading.smoothedRTTMicroseconds).min()
        return ReplayLossRecord(
            key: key, source: .tcpInfo, recordedAt: recordedAt,
            minimumRTT: minimum.map { Double($0) / 1e6 },
            duration: samples.last?.time ?? 0,
            samples: samples)
    }

    /// Differences of the cumulative counters between successive readings, keeping only stretches in which data
    /// went out (a reading plays the role of a captured packet in the reference: idle stretches carry none).
    /// Counters that go backwards (never expected) are treated as unchanged.
    ///
    /// A stretch's loss is its growth of `bytesLost` (retransmitted bytes less those reported as duplicates). The
    /// duplicate report comes a round trip after the retransmission (longer than a sampling period on most paths),
    /// so the net count can fall. The timeline is computed once all readings are in, so each reading's loss is the
    /// least any later reading reports: a retransmission later reported as a duplicate is never charged, and the
    /// total is the last reading's net count. A stretch is charged at most what it sent; the rest goes to the next.
    static func samples(_ readings: [Timed]) -> [ReplayLossRecord.Sample] {
        var settled = readings.map(\.reading.bytesLost)
        for index in settled.indices.reversed().dropFirst() {
            settled[index] = min(settled[index], settled[index + 1])
        }
        var samples: [ReplayLossRecord.Sample] = []
        var sent: UInt64 = 0
        var charged: UInt64 = 0
        var lastTime = 0.0
        for (index, timed) in readings.enumerated() {
            let newSent = max(sent, timed.reading.bytesSent)
            let time = max(lastTime, timed.time)
            if newSent > sent {
                let sentDelta = newSent - sent
                let lost = settled[index]
                let lostDelta = lost > charged ? min(lost - charged, sentDelta) : 0
                samples.append(.init(time: time, bytesSent: Double(sentDelta), bytesLost: Double(lostDelta)))
                charged += lostDelta
            }
            sent = newSent
            lastTime = time
        }
        return samples
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
