import Testing
import WeheAnalysis
import WeheCore
import WeheStatistics

@Test("T_diff: 80 values with the documented median, mean and range")
func tDiffReference() throws {
    let values = TDiffReference.values
    #expect(values.count == 80)
    #expect(abs(try Descriptive.median(values) - 8.53) < 0.005)
    #expect(abs(try Descriptive.mean(values) - 15.24) < 0.005)
    #expect(values.min() == 0)
    #expect(abs((values.max() ?? 0) - 58.6) < 0.05)
}

@Test(
    "8.2: Mann-Whitney U of given differences against T_diff",
    arguments: [
        (TDiffReference.values, 3200.0, 0.500681),
        (TDiffReference.values.map { $0 * 0.5 }, 2159.5, 1.93249e-4),
        (Vectors.rep(2, 80), 800, 1.03053e-18),
        (Vectors.rep(8.5, 80), 3200, 0.500728),
        (Vectors.rep(25, 80), 5040, 0.99999999999),
    ])
func mannWhitneyVectors(differences: [Double], u1: Double, pValue: Double) throws {
    let result = try ThroughputSumTest.compare(differences: differences)
    #expect(result.statistic == u1)
    #expect(Vectors.close(result.pValue, pValue, relative: 1e-5), "p \(result.pValue)")
}

@Test(
    "8.2: throughput-sum test on constant replays (deterministic whatever the draws)",
    arguments: [
        (2.5, 40.0, 3.36546e-31, LocalizationVerdict.accessNetwork),
        (5.0, 6080, 1.0, .noEvidence),
        (2.75, 3360, 0.720907, .noEvidence),
        (2.625, 1680, 1.48270e-8, .accessNetwork),
    ])
func throughputSumVectors(each: Double, u1: Double, pValue: Double, verdict: LocalizationVerdict) throws {
    var generator = SeededGenerator(seed: 5)
    let result = try #require(
        try ThroughputSumTest.run(
            single: Vectors.rep(5, 100), first: Vectors.rep(each, 100), second: Vectors.rep(each, 100),
            using: &generator))
    #expect(result.differences.count == 80)
    #expect(result.statistic == u1)
    #expect(Vectors.close(result.pValue, pValue, relative: 1e-5), "p \(result.pValue)")
    #expect(result.simultaneousMeansMbps == [each, each])
    #expect(result.sumMeanMbps == 2 * each)
    #expect(result.singleMeanMbps == 5)
    #expect(LocalizationRules().decide(mwuPValue: result.pValue, correlationPValues: nil).verdict == verdict)
}

@Test("Throughput-sum test: pairing by index up to the shorter list, and not enough data")
func throughputSumEdges() throws {
    var generator = SeededGenerator(seed: 1)
    let uneven = try #require(
        try ThroughputSumTest.run(
            single: Vectors.rep(4, 30), first: Vectors.rep(2, 50), second: Vectors.rep(2, 20), using: &generator))
    #expect(uneven.sumMeanMbps == 4)
    #expect(uneven.differences.allSatisfy { $0 == 0 })
    #expect(try ThroughputSumTest.run(single: [5], first: [1, 2], second: [1, 2], using: &generator) == nil)
    #expect(try ThroughputSumTest.run(single: [0, 0], first: [0, 0], second: [0, 0], using: &generator) == nil)
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try ThroughputSumTest.run(single: [1, 2], first: [1, -2], second: [1, 2], using: &generator)
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try ThroughputSumTest.compare(differences: [])
    }
}

@Test("Throughput-sum test: a real shared limiter is detected, separate limiters are not")
func throughputSumRealistic() throws {
    var noise = SeededGenerator(seed: 99)
    func jitter(_ mean: Double, _ count: Int) -> [Double] {
        (0..<count).map { _ in mean * Double.random(in: 0.9...1.1, using: &noise) }
    }
    // Shared 4 Mbit/s limiter: the two simultaneous replays split it.
    var generator = SeededGenerator(seed: 2)
    let shared = try #require(
        try ThroughputSumTest.run(
            single: jitter(4, 120), first: jitter(2, 120), second: jitter(2, 120), using: &generator))
    #expect(shared.pValue < 0.05)
    // Separate limiters: each replay gets 4 Mbit/s, the sum is twice the single replay.
    let separate = try #require(
        try ThroughputSumTest.run(
            single: jitter(4, 120), first: jitter(4, 120), second: jitter(4, 120), using: &generator))
    #expect(separate.pValue > 0.5)
}

@Test("8.3: interval sizes from the minimum RTT and duration")
func intervalSizes() {
    let long = LossCorrelationTest.intervalSizes(minimumRTT: 0.05, duration: 45)
    #expect(long.count == 21)
    #expect(long.first == 0.5)
    #expect(long.last == 1.5)
    #expect(long.contains(0.55))
    let short = LossCorrelationTest.intervalSizes(minimumRTT: 0.05, duration: 30)
    #expect(short.count == 11)
    #expect(short.last == 1.0)
    #expect(LossCorrelationTest.intervalSizes(minimumRTT: 0.1, duration: 20).isEmpty)
    #expect(LossCorrelationTest.intervalSizes(minimumRTT: 0, duration: 20).isEmpty)
}

@Test("8.3 A: collapse keeps 14 rows and the losses correlate")
func lossCorrelationVectorA() {
    let p1 = [0, 0, 0.02, 0.05, 0, 0, 0, 0.03, 0.01, 0, 0.04, 0, 0, 0, 0.02, 0.06, 0, 0, 0.01, 0]
    let p2 = [0, 0, 0.01, 0.04, 0, 0, 0, 0.02, 0.02, 0, 0.05, 0, 0, 0, 0.01, 0.05, 0, 0, 0.02, 0]
    let collapsed = LossCorrelationTest.collapse(p1, p2)
    #expect(collapsed.first.count == 14)
    #expect(collapsed.second.count == 14)
    let result = LossCorrelationTest.correlation(p1, p2)
    #expect(Vectors.close(result.rho, 0.939915, relative: 1e-5))
    #expect(Vectors.close(result.pValue, 2.98184e-7, relative: 1e-5))
}

@Test("8.3 B: no adjacent loss-free rows, all 20 stay, negative correlation")
func lossCorrelationVectorB() {
    let p1 = [0, 0.03, 0, 0, 0.02, 0, 0, 0.01, 0, 0, 0.04, 0, 0, 0.02, 0, 0, 0.05, 0, 0, 0.01]
    let p2 = [0.02, 0, 0, 0.03, 0, 0, 0.01, 0, 0, 0.02, 0, 0, 0.04, 0, 0, 0.03, 0, 0, 0.01, 0]
    #expect(LossCorrelationTest.collapse(p1, p2).first.count == 20)
    let result = LossCorrelationTest.correlation(p1, p2)
    #expect(Vectors.close(result.rho, -0.508563, relative: 1e-5))
    #expect(Vectors.close(result.pValue, 0.988982, relative: 1e-5))
}

@Test("8.3: all-zero series collapse to one row and give no p-value")
func lossCorrelationAllZero() {
    #expect(LossCorrelationTest.collapse(Vectors.rep(0, 30), Vectors.rep(0, 30)).first == [0])
    #expect(LossCorrelationTest.correlation(Vectors.rep(0, 30), Vectors.rep(0, 30)).pValue.isNaN)
}

@Test(
    "8.3: client verdict on correlation p-values",
    arguments: [
        ([0.01, 0.02, 0.2, 0.3], nil, LocalizationVerdict.accessNetwork, LocalizationVerdict.noEvidence),
        ([0.2, 0.3], nil, .noEvidence, .noEvidence),
        ([], nil, .inconclusive, .inconclusive),
        ([0.049, 0.051], nil, .accessNetwork, .noEvidence),
        ([], 0.2, .noEvidence, .noEvidence),
    ] as [([Double], Double?, LocalizationVerdict, LocalizationVerdict)])
func localizationVerdicts(
    pValues: [Double], mwu: Double?, verdict: LocalizationVerdict, oldVerdict: LocalizationVerdict
) {
    #expect(LocalizationRules().decide(mwuPValue: mwu, correlationPValues: pValues).verdict == verdict)
    let old = LocalizationRules(correlationRatioThreshold: 0.95)
    #expect(old.decide(mwuPValue: mwu, correlationPValues: pValues).verdict == oldVerdict)
    #expect(LocalizationRules().decide(mwuPValue: nil, correlationPValues: nil).verdict == .inconclusive)
}

/// A loss timeline sampled every 10 ms for `duration` seconds, 12 500 bytes per sample, losing `lossBytes` in the
/// samples whose index is in `lossy`.
private func timeline(duration: Double, lossy: Set<Int>, lossBytes: Double = 2000) throws -> LossTimeline {
    let count = Int(duration * 100)
    return try LossTimeline(
        samples: (1...count).map { index in
            LossTimeline.Sample(
                time: Double(index) / 100, bytesSent: 12_500, bytesLost: lossy.contains(index) ? lossBytes : 0)
        })
}

@Test("Per-interval loss ratios: inclusive ends, labels in milliseconds, sparse intervals dropped")
func intervalLossRatios() throws {
    let line = try timeline(duration: 2, lossy: [5, 150])
    let ratios = line.intervalLossRatios(size: 0.5, minimumSamples: 11)
    #expect(ratios.map(\.endMilliseconds) == [500, 1000, 1500, 2000])
    // [0, 0.5] holds samples 1…50 (the sample at 0.5 s is in both neighbouring intervals).
    #expect(Vectors.close(ratios[0].ratio, 2000 / (50 * 12_500)))
    #expect(ratios[1].ratio == 0)
    // [1.0, 1.5] holds samples 100…150, 51 samples, one lossy.
    #expect(Vectors.close(ratios[2].ratio, 2000 / (51 * 12_500)))
    #expect(line.intervalLossRatios(size: 0.05, minimumSamples: 11).isEmpty)
    #expect(line.intervalLossRatios(size: 0, minimumSamples: 1).isEmpty)
    #expect(Vectors.close(line.averageLoss, 4000 / (200 * 12_500)))
    #expect(try LossTimeline(samples: []).averageLoss == 0)
}

@Test("Loss timelines reject malformed samples and accept cumulative counters")
func lossTimelineValidation() throws {
    #expect(throws: WeheAnalysisError(.invalidTimes, "")) {
        try LossTimeline(samples: [
            .init(time: 1, bytesSent: 1, bytesLost: 0), .init(time: 0.5, bytesSent: 1, bytesLost: 0),
        ])
    }
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try LossTimeline(samples: [.init(time: 1, bytesSent: 10, bytesLost: 11)])
    }
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try LossTimeline(samples: [.init(time: 1, bytesSent: .nan, bytesLost: 0)])
    }
    #expect(throws: WeheAnalysisError(.invalidTimes, "")) {
        try LossTimeline(samples: [.init(time: 1e12, bytesSent: 1, bytesLost: 0)])
    }
    let cumulative = try LossTimeline(cumulative: [(0.1, 1000, 0), (0.2, 2500, 100), (0.3, 2500, 100)])
    #expect(cumulative.samples.map(\.bytesSent) == [1000, 1500, 0])
    #expect(cumulative.samples.map(\.bytesLost) == [0, 100, 0])
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try LossTimeline(cumulative: [(0.1, 1000, 0), (0.2, 900, 0)])
    }
}

@Test("Loss correlation end to end: shared loss bursts correlate, independent ones do not")
func lossCorrelationEndToEnd() throws {
    var generator = SeededGenerator(seed: 8)
    let bursts = Set((0..<40).map { _ in Int.random(in: 1...4500, using: &generator) })
    let otherBursts = Set((0..<40).map { _ in Int.random(in: 1...4500, using: &generator) })
    let first = LossBranch(timeline: try timeline(duration: 45, lossy: bursts), minimumRTT: 0.05)
    let shared = LossBranch(timeline: try timeline(duration: 45, lossy: bursts), minimumRTT: 0.04)
    let independent = LossBranch(timeline: try timeline(duration: 45, lossy: otherBursts), minimumRTT: 0.05)

    let correlated = try #require(try LossCorrelationTest.run(first: first, second: shared))
    #expect(correlated.intervalSizes.count == 21)
    #expect(correlated.pValues.count == 21)
    #expect(correlated.pValues.allSatisfy { $0 < 0.05 })
    #expect(
        LocalizationRules().decide(mwuPValue: nil, correlationPValues: correlated.pValues).verdict
            == .accessNetwork)

    let unrelated = try #require(try LossCorrelationTest.run(first: first, second: independent))
    let below = unrelated.pValues.filter { $0 < 0.05 }.count
    #expect(Double(below) / Double(max(unrelated.pValues.count, 1)) < 0.5)

    let lossless = LossBranch(timeline: try timeline(duration: 45, lossy: []), minimumRTT: 0.05)
    let none = try #require(try LossCorrelationTest.run(first: lossless, second: lossless))
    #expect(none.pValues.isEmpty)
    #expect(none.averageLoss == [0, 0])

    let tooShort = LossBranch(timeline: try timeline(duration: 10, lossy: bursts), minimumRTT: 0.05)
    #expect(try LossCorrelationTest.run(first: first, second: tooShort) == nil)
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try LossCorrelationTest.run(first: first, second: LossBranch(timeline: first.timeline, minimumRTT: 0))
    }
}

@Test("Localization analyzer: combined verdict and reasons for missing tests")
func localizationAnalyzer() throws {
    let analyzer = try LocalizationAnalyzer()
    var generator = SeededGenerator(seed: 8)
    let bursts = Set((0..<40).map { _ in Int.random(in: 1...4500, using: &generator) })
    let branch = LossBranch(timeline: try timeline(duration: 45, lossy: bursts), minimumRTT: 0.05)

    let full = try analyzer.analyze(
        .init(
            single: Vectors.rep(5, 100), simultaneous: (Vectors.rep(5, 100), Vectors.rep(5, 100)),
            loss: (branch, branch)),
        seed: 1)
    #expect(full.mwuStatistic == 6080)
    #expect(full.mwuPValue == 1)
    #expect(full.correlationPValues.count == 21)
    #expect(full.verdict == .accessNetwork)
    #expect(full.simultaneousMeansMbps == [5, 5])
    #expect(full.note == nil)

    let nothing = try analyzer.analyze(.init(single: nil, simultaneous: nil, loss: nil), seed: 1)
    #expect(nothing.verdict == .inconclusive)
    #expect(nothing.note?.contains("throughput samples missing") == true)
    #expect(nothing.note?.contains("loss data missing") == true)

    let short = LossBranch(timeline: try timeline(duration: 10, lossy: bursts), minimumRTT: 0.1)
    let fewIntervals = try analyzer.analyze(
        .init(single: [5], simultaneous: ([2], [2]), loss: (short, short)), seed: 1)
    #expect(fewIntervals.verdict == .inconclusive)
    #expect(fewIntervals.note?.contains("too few throughput samples") == true)
    #expect(fewIntervals.note?.contains("gives 30 intervals") == true)

    let throughputOnly = try analyzer.analyze(
        .init(single: Vectors.rep(5, 100), simultaneous: (Vectors.rep(2.5, 100), Vectors.rep(2.5, 100)), loss: nil),
        seed: 1)
    #expect(throughputOnly.verdict == .accessNetwork)
    #expect(throughputOnly.intervalSizes.isEmpty)

    #expect(LocalizationAnalyzer.gate(server1: .differentiation, server2: .differentiation) == nil)
    #expect(LocalizationAnalyzer.gate(server1: .differentiation, server2: .inconclusive)?.verdict == .noEvidence)
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try LocalizationAnalyzer(configuration: LocalizationConfiguration(monteCarloRounds: 0))
    }
}
