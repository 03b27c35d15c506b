import Foundation
import Testing
import WeheAnalysis
import WeheCore
import WeheStatistics

private func series(_ values: [Double]) -> ThroughputSeries { ThroughputSeries(mbps: values, interval: 0.1) }

@Test("A replay without positive sample gives an explicit inconclusive result instead of failing")
func noPositiveSample() throws {
    let analyzer = try DifferentiationAnalyzer()
    let summary = try analyzer.analyze(
        original: series(Vectors.rep(0, 40)), control: series(Vectors.cyc(8, 0.25)), seed: 1)
    #expect(summary.verdict == .inconclusive)
    #expect(summary.ksPValue == 1)
    #expect(summary.ksStatistic == 0)
    #expect(summary.ks2RatioTest == 0)
    #expect(summary.originalMeanMbps == 0)
    #expect(summary.controlMeanMbps == 8)
    #expect(summary.areaTest == 1)
    #expect(summary.note?.contains("original replay has no positive throughput sample") == true)

    let both = try analyzer.analyze(original: series([0, 0]), control: series([]), seed: 1)
    #expect(both.verdict == .inconclusive)
    #expect(both.areaTest == 0)
    #expect(both.note?.contains("control replay has no samples") == true)
    #expect(both.note?.contains("original replay has no positive") == true)

    let ios = try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(rules: .ios))
    #expect(try ios.analyze(original: series([5, 6, 7]), control: series([0]), seed: 1).verdict == .inconclusive)
}

@Test(
    "Malformed samples throw typed errors",
    arguments: [
        (ThroughputSeries(mbps: [1, .nan, 2], interval: 1), WeheAnalysisError.Code.invalidSample),
        (ThroughputSeries(mbps: [1, .infinity], interval: 1), .invalidSample),
        (ThroughputSeries(mbps: [1, -0.5], interval: 1), .invalidSample),
        (ThroughputSeries(mbps: [1, 2, 3], times: [0.1, 0.2]), .mismatchedLengths),
        (ThroughputSeries(mbps: [1, 2], times: [0.2, 0.1]), .invalidTimes),
        (ThroughputSeries(mbps: [1, 2], times: [0.1, .nan]), .invalidTimes),
    ])
func malformedSamples(bad: ThroughputSeries, code: WeheAnalysisError.Code) throws {
    let analyzer = try DifferentiationAnalyzer()
    let good = series(Vectors.cyc(8, 0.25))
    #expect(throws: WeheAnalysisError(code, "")) { try analyzer.analyze(original: bad, control: good, seed: 1) }
    #expect(throws: WeheAnalysisError(code, "")) { try analyzer.analyze(original: good, control: bad, seed: 1) }
}

@Test("The same samples and seed give the same summary; the Android verdict does not depend on the seed")
func determinism() throws {
    let analyzer = try DifferentiationAnalyzer()
    let original = series(Vectors.rep(1, 10) + Vectors.rep(5, 6))
    let control = series(Vectors.rep(5, 16))
    let first = try analyzer.analyze(original: original, control: control, seed: 42)
    let again = try analyzer.analyze(original: original, control: control, seed: 42)
    #expect(first == again)
    let verdicts = try (UInt64(0)..<20).map {
        try analyzer.analyze(original: original, control: control, seed: $0).verdict
    }
    #expect(Set(verdicts) == [.differentiation])
}

@Test("Dropping the last sample, as the server does with uploads")
func dropLastSample() throws {
    let trimming = try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(dropsLastSample: true))
    let plain = try DifferentiationAnalyzer()
    // The last interval of the original is a partial one at 0.1 Mbit/s.
    let original = series(Vectors.rep(6, 20) + [0.1])
    let control = series(Vectors.rep(6, 20) + [0.1])
    let trimmed = try trimming.analyze(original: original, control: control, seed: 1)
    #expect(trimmed.originalMeanMbps == 6)
    let kept = try plain.analyze(original: original, control: control, seed: 1)
    #expect(kept.originalMeanMbps < 6)
}

@Test("Too few samples for the jackknife: ratio 0 with a note, Android verdict unaffected")
func tinyLists() throws {
    let analyzer = try DifferentiationAnalyzer()
    let summary = try analyzer.analyze(original: series([1]), control: series([9]), seed: 1)
    #expect(summary.ks2RatioTest == 0)
    #expect(summary.note?.contains("jackknife") == true)
    #expect(summary.ksPValue == 1)
    #expect(summary.verdict == .inconclusive)
}

@Test("Port blocked: the locally built result of analysis.md 1.8")
func portBlocked() throws {
    let summary = try DifferentiationAnalyzer().portBlockedSummary(controlMeanMbps: 12.5)
    #expect(summary.verdict == .blocked)
    #expect(summary.areaTest == -1)
    #expect(summary.ksPValue == -1)
    #expect(summary.ks2RatioTest == -1)
    #expect(summary.originalMeanMbps == 0)
    #expect(summary.controlMeanMbps == 12.5)
    #expect(summary.thresholds.area == 0.3)
    #expect(try DifferentiationAnalyzer().portBlockedSummary(controlMeanMbps: .nan).controlMeanMbps == 0)
}

@Test("Decision-file numbers: per-replay max, min, mean, median, population std")
func decisionNumbers() throws {
    var generator = SeededGenerator(seed: 3)
    let stats = try DifferentiationAnalyzer().statistics(
        originalValues: [0, 2, 4, 6], controlValues: [10, 10, 10, 14], using: &generator)
    #expect(
        stats.original
            == ThroughputSummary(
                max: 6, min: 0, mean: 3, median: 3,
                standardDeviation: 5.0.squareRoot(), count: 4))
    #expect(stats.control.median == 10)
    #expect(stats.control.standardDeviation == 3.0.squareRoot())
    #expect(stats.area == 8)
    // KS runs on positive samples only: [2, 4, 6] vs [10, 10, 10, 14] are fully separated.
    #expect(stats.ksStatistic == 1)
    #expect(Vectors.close(stats.ksPValue, 1.0 / 35 * 2, relative: 1e-9))
}

@Test("Confirmation: differentiation and inconclusive are rerun once, the second verdict is final")
func confirmationRule() throws {
    let rule = ConfirmationRule()
    #expect(rule.needsConfirmation(after: .differentiation, isConfirmation: false))
    #expect(rule.needsConfirmation(after: .inconclusive, isConfirmation: false))
    #expect(rule.needsConfirmation(after: .blocked, isConfirmation: false))
    #expect(!rule.needsConfirmation(after: .noDifferentiation, isConfirmation: false))
    #expect(!rule.needsConfirmation(after: .differentiation, isConfirmation: true))
    #expect(!rule.needsConfirmation(after: .differentiation, isConfirmation: false, isLocalization: true))
    #expect(!ConfirmationRule(enabled: false).needsConfirmation(after: .differentiation, isConfirmation: false))

    let analyzer = try DifferentiationAnalyzer()
    let throttled = try analyzer.analyze(
        original: series(Vectors.cyc(1.5, 0.0625)), control: series(Vectors.cyc(8, 0.25)), seed: 1)
    let clean = try analyzer.analyze(
        original: series(Vectors.cyc(8, 0.25)), control: series(Vectors.cyc(8, 0.25, m: 11)), seed: 1)

    var flow = ConfirmationFlow()
    #expect(flow.step == .runTest(isConfirmation: false))
    #expect(try flow.record(throttled) == .runTest(isConfirmation: true))
    #expect(try flow.record(clean) == .finished(final: clean, discarded: throttled))
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) { try flow.record(clean) }

    var direct = ConfirmationFlow()
    #expect(try direct.record(clean) == .finished(final: clean, discarded: nil))

    var twice = ConfirmationFlow()
    try twice.record(throttled)
    #expect(try twice.record(throttled) == .finished(final: throttled, discarded: throttled))

    var localization = ConfirmationFlow(isLocalization: true)
    #expect(try localization.record(throttled) == .finished(final: throttled, discarded: nil))
}

@Test("Too few measurements: under 5 positive samples in a replay cannot give 'no differentiation'")
func tooFewMeasurements() throws {
    let analyzer = try DifferentiationAnalyzer()
    // Two samples each, equal: the published rule says "no differentiation" (area 0, p 1).
    let two = try analyzer.analyze(original: series([5, 5]), control: series([5, 5]), seed: 1)
    #expect(two.verdict == .inconclusive)
    #expect(two.insufficientDataReason?.hasPrefix("too few measurements") == true)
    #expect(two.note?.contains("the original replay has 2 positive throughput samples") == true)
    // Four samples like the control's 100: still too few to say "no differentiation".
    let fourSame = try analyzer.analyze(
        original: series(Array(Vectors.cyc(10, 0.25).prefix(4))), control: series(Vectors.cyc(10, 0.25)), seed: 1)
    #expect(fourSame.verdict == .inconclusive)
    #expect(fourSame.note?.contains("original replay has 4 positive") == true)
    #expect(fourSame.note?.contains("control") == false)
    // Four fully separated samples against 100: p = 2 / C(104, 4) = 4.3e-7 supports the differentiation: it stands.
    let four = try analyzer.analyze(
        original: series(Vectors.rep(1, 4)), control: series(Vectors.cyc(10, 0.25)), seed: 1)
    #expect(four.ksPValue < 1e-6)
    #expect(four.verdict == .differentiation)
    #expect(four.insufficientDataReason == nil)
    // Five of each suffice (the smallest equal size whose exact KS p-value can go below 0.01: 2 / C(10, 5)).
    let five = try analyzer.analyze(original: series(Vectors.rep(1, 5)), control: series(Vectors.rep(9, 5)), seed: 1)
    #expect(five.verdict == .differentiation)
    #expect(five.insufficientDataReason == nil)
    let fiveSame = try analyzer.analyze(
        original: series([5, 5.2, 4.9, 5.1, 5]), control: series([5.1, 5, 4.9, 5.2, 5]), seed: 1)
    #expect(fiveSame.verdict == .noDifferentiation)
    #expect(fiveSame.note?.contains("too few measurements") != true)
    // The reason survives other remarks in the note, and only an inconclusive verdict carries one.
    var mixed = two
    mixed.note = "too few samples for the jackknife; " + (two.note ?? "")
    #expect(mixed.insufficientDataReason == two.insufficientDataReason)
    mixed.verdict = .noDifferentiation
    #expect(mixed.insufficientDataReason == nil)
    // The minimum is configurable and validated.
    let lenient = try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(minimumPositiveSamples: 2))
    #expect(
        try lenient.analyze(original: series([5, 5]), control: series([5, 5]), seed: 1).verdict == .noDifferentiation)
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(minimumPositiveSamples: 0))
    }
}

@Test("A configuration written before the sample minimum existed decodes with the default")
func configurationDecodesWithoutMinimum() throws {
    let encoded = try JSONEncoder().encode(DifferentiationConfiguration(minimumPositiveSamples: 7))
    var object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
    #expect(object["minimumPositiveSamples"] as? Int == 7)
    object.removeValue(forKey: "minimumPositiveSamples")
    let old = try JSONDecoder().decode(
        DifferentiationConfiguration.self, from: try JSONSerialization.data(withJSONObject: object))
    #expect(old.minimumPositiveSamples == DifferentiationConfiguration.defaultMinimumPositiveSamples)
}
