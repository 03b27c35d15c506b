import WeheAnalysis
import WeheStore

/// What analysis.md section 6.4 needs from one server's loss timeline: its minimum RTT and duration, per-interval
/// loss ratios at interval sizes 10…50 × min RTT, and the `LossBranch` the loss-correlation test takes.
enum LossMeasurements {
    /// The loss-correlation settings of the analysis (interval multiples, minimum intervals and readings).
    static let configuration = LossCorrelationTest.Configuration()

    /// The timeline as the analysis takes it.
    /// - Throws: `WeheAnalysisError` when the readings are malformed (the store validates them, so only a peer's
    ///   answer can be).
    static func timeline(_ record: ReplayLossRecord) throws(WeheAnalysisError) -> LossTimeline {
        try LossTimeline(
            samples: record.samples.map {
                LossTimeline.Sample(time: $0.time, bytesSent: $0.bytesSent, bytesLost: $0.bytesLost)
            })
    }

    /// The branch of the loss-correlation test, or `nil` when the kernel never measured an RTT.
    static func branch(_ record: ReplayLossRecord) throws(WeheAnalysisError) -> LossBranch? {
        guard let rtt = record.minimumRTT else { return nil }
        return LossBranch(timeline: try timeline(record), minimumRTT: rtt, duration: record.duration)
    }

    /// The interval sizes of this timeline alone: `round(minRTT·i, 3)`, `i = 10…50`, holding at least 30 intervals.
    static func intervalSizes(_ record: ReplayLossRecord) -> [Double] {
        guard let rtt = record.minimumRTT else { return [] }
        return LossCorrelationTest.intervalSizes(
            minimumRTT: rtt, duration: record.duration, configuration: configuration)
    }

    /// Per-interval loss ratios for each size: `(size, interval end in seconds, lost / sent)`, intervals with too
    /// few readings left out (analysis.md 6.4 item 4).
    static func intervalRatios(
        _ record: ReplayLossRecord,
        sizes: [Double]
    ) throws(WeheAnalysisError) -> [(size: Double, end: Double, ratio: Double)] {
        let timeline = try timeline(record)
        var rows: [(size: Double, end: Double, ratio: Double)] = []
        for size in sizes {
            for interval in timeline.intervalLossRatios(
                size: size, minimumSamples: configuration.minimumSamplesPerInterval)
            {
                rows.append((size, Double(interval.endMilliseconds) / 1000, interval.ratio))
            }
        }
        return rows
    }
}
