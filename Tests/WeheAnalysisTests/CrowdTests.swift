import Foundation
import Testing
import WeheAnalysis
import WeheStatistics

/// The synthetic population of analysis.md section 8.5: controls ~ N(cap, 0.2·cap) with cap ~ lognormal (median
/// 8 Mbit/s, σ 0.5); throttled originals ~ N(rate, 0.08); other originals like the controls. Values are clipped at 0.
private struct Population {
    var generator: SeededGenerator

    mutating func normal() -> Double {
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &generator)
        let u2 = Double.random(in: 0..<1, using: &generator)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    mutating func samples(mean: Double, deviation: Double, count: Int = 100) -> [Double] {
        (0..<count).map { _ in max(0, mean + deviation * normal()) }
    }

    /// Number of throttled tests generated so far.
    var throttledCount = 0

    mutating func records(
        tests: Int, throttledFraction: Double, rate: Double, provider: String = "ISP", replay: String = "Video"
    ) -> [CrowdTestRecord] {
        (0..<tests).map { _ in
            let cap = 8 * exp(0.5 * normal())
            let control = samples(mean: cap, deviation: 0.2 * cap)
            let throttled = Double.random(in: 0..<1, using: &generator) < throttledFraction
            if throttled { throttledCount += 1 }
            let original = throttled ? samples(mean: rate, deviation: 0.08) : samples(mean: cap, deviation: 0.2 * cap)
            return CrowdTestRecord(
                provider: provider, replay: replay, measurement: .samples(original: original, control: control))
        }
    }
}

@Test("8.5: 60 % throttled at 1.5 Mbit/s: positives in band and the rate detected", arguments: [UInt64(1), 2, 3])
func crowdThrottledPopulation(seed: UInt64) throws {
    var population = Population(generator: SeededGenerator(seed: seed))
    let records = population.records(tests: 300, throttledFraction: 0.6, rate: 1.5)
    let reports = try CrowdAnalyzer.analyze(records, seed: seed)
    let report = try #require(reports.first)
    #expect(reports.count == 1)
    #expect(report.totalTests == 300)
    #expect(report.analyzed)
    // The reference found 161-167 positives for about 180 throttled tests: most, but not all, pass the
    // Bonferroni-corrected rule (a throttled test on a slow connection differs too little).
    let throttled = population.throttledCount
    #expect(report.positiveTests <= throttled + 3, "positives \(report.positiveTests) of \(throttled) throttled")
    #expect(report.positiveTests * 100 >= throttled * 80, "positives \(report.positiveTests) of \(throttled)")
    #expect(report.populationDiffers == true)
    #expect(report.rates.count == 1, "rates \(report.rates)")
    let rate = try #require(report.rates.first)
    #expect(abs(rate.rate - 1.5) <= 0.15, "rate \(rate)")
    #expect(rate.lower < 1.5 && 1.5 < rate.upper)
    #expect(rate.upper - rate.lower <= 1)
    #expect(report.truePositives >= report.positiveTests * 9 / 10, "true positives \(report.truePositives)")
    #expect(report.truePositives <= report.positiveTests)
}

@Test("8.5: without throttling nothing is positive and no rate is detected", arguments: [UInt64(4), 5])
func crowdCleanPopulation(seed: UInt64) throws {
    var population = Population(generator: SeededGenerator(seed: seed))
    let reports = try CrowdAnalyzer.analyze(population.records(tests: 300, throttledFraction: 0, rate: 1.5), seed: seed)
    let report = try #require(reports.first)
    #expect(report.analyzed)
    #expect(report.positiveTests == 0)
    #expect(report.rates.isEmpty)
    #expect(report.populationDiffers == nil)
    #expect(report.truePositives == 0)
}

@Test("Groups are kept apart, the size rule applies, bad records are rejected")
func crowdGrouping() throws {
    var population = Population(generator: SeededGenerator(seed: 9))
    var records = population.records(tests: 110, throttledFraction: 0.6, rate: 2, provider: "B", replay: "Video")
    records += population.records(tests: 40, throttledFraction: 0, rate: 2, provider: "A", replay: "Music")
    for bad: [Double] in [[], [1, -1], [.nan]] {
        records.append(
            CrowdTestRecord(provider: "A", replay: "Music", measurement: .samples(original: bad, control: [1])))
    }
    var analyzer = try CrowdAnalyzer(seed: 9)
    for record in records { analyzer.add(record) }
    #expect(analyzer.acceptedRecords == 150)
    #expect(analyzer.rejectedRecords == 3)
    let reports = try analyzer.finish()
    #expect(reports.map(\.provider) == ["A", "B"])
    let small = reports[0]
    #expect(small.totalTests == 40)
    #expect(small.rejectedTests == 3)
    #expect(!small.analyzed)
    #expect(small.note?.contains("too few tests") == true)
    let large = reports[1]
    #expect(large.analyzed)
    #expect(large.positiveTests > 45)
    #expect(large.rates.contains { abs($0.rate - 2) <= 0.15 })
}

@Test("Streaming: an AsyncSequence and precomputed scalars give the same report as raw samples")
func crowdStreaming() async throws {
    var population = Population(generator: SeededGenerator(seed: 12))
    let records = population.records(tests: 120, throttledFraction: 0.5, rate: 3)
    let direct = try CrowdAnalyzer.analyze(records, seed: 77)
    let stream = AsyncStream<CrowdTestRecord> { continuation in
        for record in records { continuation.yield(record) }
        continuation.finish()
    }
    let streamed = try await CrowdAnalyzer.analyze(stream, seed: 77)
    #expect(streamed == direct)

    var generator = SeededGenerator(seed: 77)
    let precomputed = records.compactMap { record -> CrowdTestRecord? in
        guard case .samples(let original, let control) = record.measurement,
            let scalars = CrowdAnalyzer.scalars(original: original, control: control, using: &generator)
        else { return nil }
        return CrowdTestRecord(provider: record.provider, replay: record.replay, measurement: .scalars(scalars))
    }
    #expect(precomputed.count == records.count)
    let fromScalars = try CrowdAnalyzer.analyze(precomputed, seed: 78)
    #expect(fromScalars.first?.positiveTests == direct.first?.positiveTests)
    #expect(fromScalars.first?.totalTests == 120)
}

@Test("Per-test scalars: jackknife only when the test can be positive; Bonferroni applied at the end")
func crowdScalars() throws {
    var generator = SeededGenerator(seed: 1)
    let same = try #require(
        CrowdAnalyzer.scalars(original: Vectors.cyc(8, 0.25), control: Vectors.cyc(8, 0.25, m: 11), using: &generator))
    #expect(same.jackknifeRatio == nil)
    // |7.9875 − 8| / min(9.125, 9.25)
    #expect(Vectors.close(same.relativeDifference, 0.0125 / 9.125, relative: 1e-9))
    let throttled = try #require(
        CrowdAnalyzer.scalars(original: Vectors.cyc(1.5, 0.0625), control: Vectors.cyc(8, 0.25), using: &generator))
    #expect(throttled.jackknifeRatio == 1)
    #expect(throttled.originalMeanMbps == 1.5)
    // |8 − 1.5| / min(1.78125, 9.125)
    #expect(Vectors.close(throttled.relativeDifference, 6.5 / 1.78125, relative: 1e-12))

    // A test with p ≈ 0.003 is positive alone (0.05/1) but not in a group of 20 (0.05/20 = 0.0025)…
    let borderline = CrowdTestScalars(
        originalMeanMbps: 2, controlMeanMbps: 5, relativeDifference: 0.5, ksPValue: 0.003, jackknifeRatio: 1)
    let record = CrowdTestRecord(provider: "P", replay: "R", measurement: .scalars(borderline))
    let configuration = CrowdConfiguration(minimumGroupTests: 1)
    #expect(try CrowdAnalyzer.analyze([record], configuration: configuration, seed: 1).first?.positiveTests == 1)
    #expect(
        try CrowdAnalyzer.analyze(Array(repeating: record, count: 20), configuration: configuration, seed: 1)
            .first?.positiveTests == 0)
    // …and a ratio at exactly 0.95 is not enough (strictly above).
    var weak = borderline
    weak.jackknifeRatio = 0.95
    let weakRecord = CrowdTestRecord(provider: "P", replay: "R", measurement: .scalars(weak))
    #expect(try CrowdAnalyzer.analyze([weakRecord], configuration: configuration, seed: 1).first?.positiveTests == 0)
}

@Test("Density search pieces: sampling range, grid peaks, merging and widening")
func fixedRateSearchPieces() throws {
    // Range: drop the top 1 %, centre ± 1.5 half-widths, clamp at −1.
    let values = (0..<100).map { Double($0) / 10 }  // 0.0 … 9.9
    let range = try #require(FixedRateSearch.samplingRange(values))
    // Top 1 value dropped: 0…9.8, centre 4.9, half-width 7.35.
    #expect(range.left == -1)
    #expect(range.right == 12.25)
    let narrow = try #require(FixedRateSearch.samplingRange([5, 5.2, 5.1]))
    #expect(narrow.left == 3.95)
    #expect(narrow.right == 6.25)
    #expect(FixedRateSearch.samplingRange([]) == nil)

    // Two tight clusters give two peaks with ranges widened to 0.5.
    let clusters = Vectors.rep(2, 50) + Vectors.rep(6, 50) + (0..<20).map { Double($0) * 0.5 }
    let peaks = FixedRateSearch.peaks(clusters, threshold: 0.5)
    try #require(peaks.count == 2)
    let rates: [Double] = peaks.map(\.rate)
    #expect(abs(rates[0] - 2) < 0.11)
    #expect(abs(rates[1] - 6) < 0.11)
    #expect(peaks.allSatisfy { $0.upper - $0.lower >= 0.5 - 1e-9 })
    // Two clusters 0.3 apart merge into one range that keeps the higher peak.
    let close = Vectors.rep(3, 60) + Vectors.rep(3.3, 40)
    let merged = FixedRateSearch.peaks(close, threshold: 0.3)
    #expect(merged.count == 1)
    #expect(abs((merged.first?.rate ?? 0) - 3) < 0.11)
    #expect((merged.first?.lower ?? 9) <= 3 && (merged.first?.upper ?? 0) >= 3.3)

    // The simulated threshold measures a 2 % spike on a uniform background.
    var generator = SeededGenerator(seed: 3)
    let threshold = FixedRateSearch.simulatedThreshold(count: 1000, range: (0, 10), using: &generator)
    #expect(threshold > 0.1 && threshold < 0.5, "threshold \(threshold)")
    #expect(threshold == (threshold * 100).rounded() / 100)

    // Control peaks hide original peaks at the same rate.
    var search = SeededGenerator(seed: 4)
    let shared = FixedRateSearch.search(
        originalMeans: Vectors.rep(4, 80) + (0..<40).map { Double($0) / 4 },
        controlMeans: Vectors.rep(4, 80) + (0..<40).map { Double($0) / 4 }, using: &search)
    #expect(shared?.peaks.isEmpty == true)
    #expect(FixedRateSearch.search(originalMeans: [], controlMeans: [1], using: &search) == nil)
}

@Test("Invalid crowd settings are rejected")
func crowdConfiguration() {
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try CrowdAnalyzer(configuration: CrowdConfiguration(familywiseAlpha: 0), seed: 1)
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        let search = FixedRateSearch.Configuration(bandwidth: -1)
        return try CrowdAnalyzer(configuration: CrowdConfiguration(search: search), seed: 1)
    }
}
