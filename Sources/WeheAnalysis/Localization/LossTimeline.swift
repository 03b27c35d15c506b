/// What one server observed about the data it sent during a replay, as a list of samples (analysis.md section 6.4).
///
/// The reference labels lost segments from a packet capture. Our servers measure from the kernel's TCP statistics
/// instead, so the input is generic: each sample says how many payload bytes were sent, and how many of them were
/// lost, in a short stretch ending at `time` (seconds since the replay started). A sample plays the role of a
/// captured packet in the reference: an interval needs more than `minimumSamplesPerInterval − 1` of them to count.
/// With TCP statistics, `bytesSent` includes retransmitted bytes and `bytesLost` is the retransmitted amount, which
/// matches the reference's convention that retransmissions count as ordinary sent bytes and the retransmitted bytes as
/// lost bytes (charged at the time of the retransmission rather than of the original segment).
public struct LossTimeline: Sendable, Hashable, Codable {
    /// One observation.
    public struct Sample: Sendable, Hashable, Codable {
        /// End of the observed stretch, seconds since the replay started.
        public var time: Double
        /// Payload bytes sent in the stretch, retransmissions included.
        public var bytesSent: Double
        /// Of those, bytes counted as lost.
        public var bytesLost: Double

        /// Creates a sample.
        public init(time: Double, bytesSent: Double, bytesLost: Double) {
            self.time = time
            self.bytesSent = bytesSent
            self.bytesLost = bytesLost
        }
    }

    /// The samples, in time order.
    public let samples: [Sample]

    /// The largest accepted sample time, seconds (one day; replays last under a minute).
    public static let maximumTime: Double = 86_400

    /// Creates a timeline from per-stretch samples.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for a non-finite or negative count, or lost bytes
    ///   exceeding sent bytes, and `.invalidTimes` for a non-finite, negative, decreasing or absurdly large
    ///   (> `maximumTime`) time.
    public init(samples: [Sample]) throws(WeheAnalysisError) {
        var previous = 0.0
        for (index, sample) in samples.enumerated() {
            guard sample.time.isFinite, sample.time >= previous, sample.time <= Self.maximumTime else {
                throw WeheAnalysisError(
                    .invalidTimes,
                    "loss sample \(index): time \(sample.time) is not finite, negative, beyond \(Self.maximumTime) s "
                        + "or earlier than the previous sample"
                )
            }
            previous = sample.time
            guard sample.bytesSent.isFinite, sample.bytesLost.isFinite, sample.bytesSent >= 0, sample.bytesLost >= 0
            else {
                throw WeheAnalysisError(.invalidSample, "loss sample \(index): byte counts must be finite and ≥ 0")
            }
            guard sample.bytesLost <= sample.bytesSent else {
                throw WeheAnalysisError(
                    .invalidSample,
                    "loss sample \(index): \(sample.bytesLost) bytes lost but only \(sample.bytesSent) sent"
                )
            }
        }
        self.samples = samples
    }

    /// Creates a timeline from cumulative counters, such as successive readings of a socket's total bytes sent and
    /// bytes retransmitted. The first reading is taken against zero.
    /// - Parameter readings: `(time, totalBytesSent, totalBytesLost)` in time order.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` when a counter decreases or is not finite, and the
    ///   errors of `init(samples:)`.
    public init(cumulative readings: [(time: Double, totalBytesSent: Double, totalBytesLost: Double)])
        throws(WeheAnalysisError)
    {
        var samples: [Sample] = []
        samples.reserveCapacity(readings.count)
        var sent = 0.0
        var lost = 0.0
        for (index, reading) in readings.enumerated() {
            guard reading.totalBytesSent >= sent, reading.totalBytesLost >= lost,
                reading.totalBytesSent.isFinite, reading.totalBytesLost.isFinite
            else {
                throw WeheAnalysisError(.invalidSample, "loss reading \(index): a cumulative counter decreased")
            }
            samples.append(
                Sample(
                    time: reading.time, bytesSent: reading.totalBytesSent - sent,
                    bytesLost: reading.totalBytesLost - lost))
            sent = reading.totalBytesSent
            lost = reading.totalBytesLost
        }
        try self.init(samples: samples)
    }

    /// Time of the last sample, or 0 for an empty timeline.
    public var duration: Double { samples.last?.time ?? 0 }

    /// Lost bytes divided by sent bytes over the whole timeline; 0 when nothing was sent.
    public var averageLoss: Double {
        var sent = 0.0
        var lost = 0.0
        for sample in samples {
            sent += sample.bytesSent
            lost += sample.bytesLost
        }
        return sent > 0 ? lost / sent : 0
    }

    /// The loss ratio of each interval of length `size` (analysis.md section 6.4 item 4).
    ///
    /// Intervals are `[t, t + size]` for `t = 0, size, 2·size, …` while `t` is before the last sample; both ends are
    /// rounded to milliseconds and both are inclusive (a sample exactly on a boundary belongs to two intervals). Each
    /// interval is labelled by its end in whole milliseconds. Intervals with fewer than `minimumSamples` samples, or
    /// with no byte sent, are left out. A size that is not positive, or that would cut the timeline into more than
    /// ten million intervals, yields an empty list.
    /// - Returns: `(label, ratio)` pairs in time order.
    public func intervalLossRatios(size: Double, minimumSamples: Int) -> [(endMilliseconds: Int, ratio: Double)] {
        guard size.isFinite, size > 0, let last = samples.last?.time, last / size <= 10_000_000 else { return [] }
        var sentPrefix = [0.0]
        var lostPrefix = [0.0]
        sentPrefix.reserveCapacity(samples.count + 1)
        lostPrefix.reserveCapacity(samples.count + 1)
        for sample in samples {
            sentPrefix.append((sentPrefix.last ?? 0) + sample.bytesSent)
            lostPrefix.append((lostPrefix.last ?? 0) + sample.bytesLost)
        }
        var result: [(endMilliseconds: Int, ratio: Double)] = []
        var step = 0
        while Double(step) * size < last {
            let startMs = (Double(step) * size * 1000).rounded()
            let endMs = ((Double(step) * size + size) * 1000).rounded()
            step += 1
            let first = firstIndex { $0 * 1000 >= startMs - 1e-6 }
            let end = firstIndex { $0 * 1000 > endMs + 1e-6 }
            guard end - first >= minimumSamples else { continue }
            let sent = sentPrefix[end] - sentPrefix[first]
            guard sent > 0 else { continue }
            result.append((Int(endMs), (lostPrefix[end] - lostPrefix[first]) / sent))
        }
        return result
    }

    /// The index of the first sample whose time satisfies `predicate` (which must be monotone), or `samples.count`.
    private func firstIndex(where predicate: (Double) -> Bool) -> Int {
        var low = 0
        var high = samples.count
        while low < high {
            let middle = (low + high) / 2
            if predicate(samples[middle].time) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
