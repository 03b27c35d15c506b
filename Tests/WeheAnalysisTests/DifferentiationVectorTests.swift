import Testing
import WeheAnalysis
import WeheCore
import WeheStatistics

/// One row of analysis.md section 8.1.
struct PerTestVector: CustomTestStringConvertible, Sendable {
    var id: String
    var original: [Double]
    var control: [Double]
    var areaTest: Double
    var pValue: Double
    var distance: Double
    var originalMean: Double
    var controlMean: Double
    /// The reference jackknife ratio range over a few Python seeds.
    var ratio: ClosedRange<Double>
    var ios: Verdict
    var android: Verdict
    var direction: DifferentiationDirection?
    var legacyArea: Double
    var legacyDecision: LegacyDecision

    var testDescription: String { id }
}

let perTestVectors: [PerTestVector] = [
    PerTestVector(
        id: "V1", original: Vectors.cyc(1.5, 0.0625), control: Vectors.cyc(8, 0.25), areaTest: 0.8125,
        pValue: 2.20876e-59, distance: 1, originalMean: 1.5, controlMean: 8, ratio: 1...1, ios: .differentiation,
        android: .differentiation, direction: .throttled, legacyArea: 3.6283,
        legacyDecision: LegacyDecision(code: 2, rate: 4.3333)),
    PerTestVector(
        id: "V2", original: Vectors.cyc(8, 0.25), control: Vectors.cyc(8, 0.25, m: 11), areaTest: -0.001563,
        pValue: 0.702057, distance: 0.10, originalMean: 8, controlMean: 7.9875, ratio: 0.98...1,
        ios: .noDifferentiation, android: .noDifferentiation, direction: nil, legacyArea: -0.0014,
        legacyDecision: LegacyDecision(code: 0, rate: 0)),
    PerTestVector(
        id: "V3", original: Vectors.cyc(5, 0.125), control: Vectors.cyc(8, 0.125), areaTest: 0.375,
        pValue: 2.20876e-59, distance: 1, originalMean: 5, controlMean: 8, ratio: 1...1, ios: .noDifferentiation,
        android: .noDifferentiation, direction: nil, legacyArea: 0.5366,
        legacyDecision: LegacyDecision(code: 2, rate: 0.6)),
    PerTestVector(
        id: "V4", original: Vectors.cyc(12, 0.25), control: Vectors.cyc(20, 0.25), areaTest: 0.4,
        pValue: 2.20876e-59, distance: 1, originalMean: 12, controlMean: 20, ratio: 1...1, ios: .differentiation,
        android: .differentiation, direction: .throttled, legacyArea: 0.6064,
        legacyDecision: LegacyDecision(code: 2, rate: 0.6667)),
    PerTestVector(
        id: "V5", original: Vectors.cyc(8, 0.125), control: Vectors.cyc(2, 0.0625), areaTest: -0.75,
        pValue: 2.20876e-59, distance: 1, originalMean: 8, controlMean: 2, ratio: 1...1, ios: .differentiation,
        android: .differentiation, direction: .prioritized, legacyArea: -2.6162,
        legacyDecision: LegacyDecision(code: -1, rate: 0)),
    PerTestVector(
        id: "V6", original: Vectors.rep(0.5, 6) + Vectors.rep(10, 4), control: Vectors.rep(10, 10), areaTest: 0.57,
        pValue: 0.0524476, distance: 0.6, originalMean: 4.3, controlMean: 10, ratio: 0.96...1, ios: .inconclusive,
        android: .inconclusive, direction: nil, legacyArea: 0.5700, legacyDecision: LegacyDecision(code: 1, rate: 0)),
    PerTestVector(
        id: "V7", original: [5.75, 6.25].repeated(50), control: [9.75, 10.25].repeated(50), areaTest: 0.4,
        pValue: 2.20876e-59, distance: 1, originalMean: 6, controlMean: 10, ratio: 1...1, ios: .differentiation,
        android: .noDifferentiation, direction: .throttled, legacyArea: 0.6368,
        legacyDecision: LegacyDecision(code: 2, rate: 0.6667)),
    PerTestVector(
        id: "V8", original: Vectors.rep(0, 50) + Vectors.rep(8, 50), control: Vectors.rep(8, 100), areaTest: 0.5,
        pValue: 1, distance: 0, originalMean: 4, controlMean: 8, ratio: 0...0, ios: .inconclusive,
        android: .inconclusive, direction: nil, legacyArea: 0.0050, legacyDecision: LegacyDecision(code: 0, rate: 0)),
    PerTestVector(
        id: "V9", original: Vectors.rep(1, 10) + Vectors.rep(5, 6), control: Vectors.rep(5, 16), areaTest: 0.5,
        pValue: 0.00301521, distance: 0.625, originalMean: 2.5, controlMean: 5, ratio: 0.26...0.30,
        ios: .inconclusive, android: .differentiation, direction: .throttled, legacyArea: 0.5,
        legacyDecision: LegacyDecision(code: 2, rate: 1)),
    PerTestVector(
        id: "V10", original: Vectors.cyc(7.5, 0.25, n: 60), control: Vectors.cyc(8, 0.25, n: 60, m: 11),
        areaTest: 0.062988, pValue: 0.0276283, distance: 0.2667, originalMean: 7.5, controlMean: 8.0042,
        ratio: 0.20...0.34, ios: .noDifferentiation, android: .noDifferentiation, direction: nil, legacyArea: 0.0578,
        legacyDecision: LegacyDecision(code: 1, rate: 0)),
]

extension Array {
    /// The array repeated `count` times.
    func repeated(_ count: Int) -> [Element] { Array((0..<count).map { _ in self }.joined()) }
}

private func series(_ values: [Double]) -> ThroughputSeries { ThroughputSeries(mbps: values, interval: 0.1) }

@Test("8.1: statistics match the reference", arguments: perTestVectors)
func perTestStatistics(vector: PerTestVector) throws {
    let analyzer = try DifferentiationAnalyzer()
    var generator = SeededGenerator(seed: 7)
    let stats = try analyzer.statistics(
        original: series(vector.original), control: series(vector.control), using: &generator)
    #expect(Vectors.close(stats.areaTest, vector.areaTest, relative: 1e-3), "area_test \(stats.areaTest)")
    #expect(Vectors.close(stats.ksPValue, vector.pValue, relative: 1e-4), "p \(stats.ksPValue)")
    #expect(Vectors.close(stats.ksStatistic, vector.distance, relative: 1e-3), "D \(stats.ksStatistic)")
    #expect(Vectors.close(stats.original.mean, vector.originalMean, relative: 1e-4))
    #expect(Vectors.close(stats.control.mean, vector.controlMean, relative: 1e-4))
    #expect(stats.insufficientDataReason == nil)
    #expect(Vectors.close(stats.area, vector.controlMean - vector.originalMean, relative: 1e-3))
}

@Test("8.1: the jackknife ratio stays near the reference range over several seeds", arguments: perTestVectors)
func perTestJackknife(vector: PerTestVector) throws {
    let analyzer = try DifferentiationAnalyzer()
    for seed in UInt64(1)...5 {
        var generator = SeededGenerator(seed: seed)
        let stats = try analyzer.statistics(
            original: series(vector.original), control: series(vector.control), using: &generator)
        let band = (vector.ratio.lowerBound - 0.1)...(vector.ratio.upperBound + 0.1)
        #expect(band.contains(stats.ks2RatioTest), "seed \(seed): ratio \(stats.ks2RatioTest)")
    }
}

@Test("8.1: verdicts under the Android/cmdline and iOS rules", arguments: perTestVectors)
func perTestVerdicts(vector: PerTestVector) throws {
    let android = try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(rules: .android))
    let ios = try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(rules: .ios))
    let androidSummary = try android.analyze(
        original: series(vector.original), control: series(vector.control), seed: 11)
    let iosSummary = try ios.analyze(original: series(vector.original), control: series(vector.control), seed: 11)
    #expect(androidSummary.verdict == vector.android)
    #expect(iosSummary.verdict == vector.ios)
    #expect(androidSummary.thresholds.ruleSet == "android")
    #expect(androidSummary.thresholds.ks2Ratio == nil)
    #expect(iosSummary.thresholds.ks2Ratio == 0.95)
    for summary in [androidSummary, iosSummary] where summary.verdict == .differentiation {
        #expect(summary.direction == vector.direction)
    }
    for summary in [androidSummary, iosSummary] where summary.verdict != .differentiation {
        #expect(summary.direction == nil)
    }
}

@Test("8.1: legacy area_test and processResult", arguments: perTestVectors)
func perTestLegacy(vector: PerTestVector) throws {
    let legacy = try LegacyAnalysis.compute(original: vector.original, control: vector.control)
    #expect(abs(legacy.areaTest - vector.legacyArea) <= 1e-4 + 5e-5 * abs(vector.legacyArea), "\(legacy.areaTest)")
    #expect(legacy.decision.code == vector.legacyDecision.code)
    #expect(abs(legacy.decision.rate - vector.legacyDecision.rate) < 1e-4, "rate \(legacy.decision.rate)")
}

@Test("V4 and V7: the reduced 0.3 area threshold, applied differently by the two rule sets")
func reducedAreaThreshold() throws {
    let v4 = VerdictRules.android.appliedThresholds(originalMeanMbps: 12, controlMeanMbps: 20)
    #expect(v4.area == 0.3)
    let v7Android = VerdictRules.android.appliedThresholds(originalMeanMbps: 6, controlMeanMbps: 10)
    let v7Ios = VerdictRules.ios.appliedThresholds(originalMeanMbps: 6, controlMeanMbps: 10)
    #expect(v7Android.area == 0.5)
    #expect(v7Ios.area == 0.3)
    // A custom threshold disables the Android rule's reduction, even for p only…
    let customP = VerdictRules(ruleSet: .android, customKSPValueThreshold: 0.01)
    #expect(customP.appliedThresholds(originalMeanMbps: 12, controlMeanMbps: 20).area == 0.5)
    // …while iOS reduces whenever the area threshold is 0.5, typed by hand or not.
    let iosTyped = VerdictRules(ruleSet: .ios, customAreaThreshold: 0.5)
    #expect(iosTyped.appliedThresholds(originalMeanMbps: 12, controlMeanMbps: 20).area == 0.3)
    let iosCustom = VerdictRules(ruleSet: .ios, customAreaThreshold: 0.4)
    #expect(iosCustom.appliedThresholds(originalMeanMbps: 12, controlMeanMbps: 20).area == 0.4)
}

@Test("Decision table: area alone gives inconclusive, p alone gives no differentiation")
func decisionTable() {
    let rules = VerdictRules.android
    let both = rules.decide(areaTest: 0.6, ksPValue: 0.001, ks2Ratio: 0, originalMeanMbps: 2, controlMeanMbps: 5)
    #expect(both.verdict == .differentiation)
    #expect(both.direction == .throttled)
    let areaOnly = rules.decide(areaTest: 0.6, ksPValue: 0.2, ks2Ratio: 1, originalMeanMbps: 2, controlMeanMbps: 5)
    #expect(areaOnly.verdict == .inconclusive)
    let pOnly = rules.decide(areaTest: 0.2, ksPValue: 1e-9, ks2Ratio: 1, originalMeanMbps: 4, controlMeanMbps: 5)
    #expect(pOnly.verdict == .noDifferentiation)
    let atThreshold = rules.decide(
        areaTest: -0.5, ksPValue: 0.0099, ks2Ratio: 0, originalMeanMbps: 6, controlMeanMbps: 3)
    #expect(atThreshold.verdict == .differentiation)
    #expect(atThreshold.direction == .prioritized)
    let pAtThreshold = rules.decide(areaTest: 0.9, ksPValue: 0.01, ks2Ratio: 1, originalMeanMbps: 1, controlMeanMbps: 9)
    #expect(pAtThreshold.verdict == .inconclusive)
    let iosUntrusted = VerdictRules.ios.decide(
        areaTest: 0.9, ksPValue: 1e-9, ks2Ratio: 0.94, originalMeanMbps: 1, controlMeanMbps: 9)
    #expect(iosUntrusted.verdict == .inconclusive)
    let nan = rules.decide(areaTest: .nan, ksPValue: .nan, ks2Ratio: .nan, originalMeanMbps: 1, controlMeanMbps: 1)
    #expect(nan.verdict == .noDifferentiation)
}

@Test("Invalid thresholds are rejected")
func invalidThresholds() {
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try VerdictRules(customAreaThreshold: 1.5).validated()
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        let rules = VerdictRules(customKSPValueThreshold: .nan)
        return try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(rules: rules))
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(jackknifeRounds: 0))
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try DifferentiationAnalyzer(configuration: DifferentiationConfiguration(jackknifeFraction: 0))
    }
}
