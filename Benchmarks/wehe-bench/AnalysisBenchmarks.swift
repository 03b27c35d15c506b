import Foundation
import WeheAnalysis
import WeheStatistics

// Crowd-sourced analysis benchmark. The synthetic records come from a counter-based generator that
// `scripts/crowd_reference.py` implements identically (same integer mixing, same floating-point operations in the
// same order), so both sides analyse exactly the same data without a data file.
//
// Data: record r, slot k uses the uniform u(c) with c = r·512 + k:
//   u(c)      = (mix(seed + (c + 1)·0x9E3779B97F4A7C15 mod 2⁶⁴) >> 11) · 2⁻⁵³
//   mix(z)    = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^ (z >> 31)
//   normal(c) = (((u(c) + u(c+1)) + u(c+2)) + u(c+3) − 2) · 1.7320508075688772   (Irwin-Hall, variance 1)
// provider = ⌊20·u(slot 0)⌋, replay = ⌊5·u(slot 1)⌋, cap = 4 + 16·u(slot 2), throttled when provider < 4,
// replay 0 and u(slot 3) < 0.6, at rate 1.5 + 0.5·provider Mbit/s. 50 original samples from slots 8 + 4j and 50
// control samples from slots 208 + 4j: control = max(0, cap + 0.2·cap·normal), original = the same law, or
// max(0, rate + 0.08·normal) when throttled.

/// The benchmark's deterministic synthetic test records, generated lazily so a million of them never sit in memory.
struct CrowdBenchmarkRecords: Sequence {
    /// Number of records.
    let count: Int
    /// Seed of the counter-based generator.
    let seed: UInt64

    /// Samples per replay.
    static let samplesPerReplay = 50
    /// Counter slots reserved per record.
    static let slotsPerRecord = 512
    static let providers = 20
    static let replays = 5

    struct Iterator: IteratorProtocol {
        let records: CrowdBenchmarkRecords
        var index = 0

        mutating func next() -> CrowdTestRecord? {
            guard index < records.count else { return nil }
            defer { index += 1 }
            return records.record(index)
        }
    }

    func makeIterator() -> Iterator { Iterator(records: self) }

    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    func uniform(_ counter: Int) -> Double {
        let z = Self.mix(seed &+ (UInt64(counter) &+ 1) &* 0x9E37_79B9_7F4A_7C15)
        return Double(z >> 11) * 0x1p-53
    }

    func normal(_ counter: Int) -> Double {
        (((uniform(counter) + uniform(counter + 1)) + uniform(counter + 2)) + uniform(counter + 3) - 2.0)
            * 1.7320508075688772
    }

    func record(_ index: Int) -> CrowdTestRecord {
        let base = index * Self.slotsPerRecord
        let provider = Int(uniform(base) * Double(Self.providers))
        let replay = Int(uniform(base + 1) * Double(Self.replays))
        let cap = 4.0 + 16.0 * uniform(base + 2)
        let throttled = provider < 4 && replay == 0 && uniform(base + 3) < 0.6
        let rate = 1.5 + 0.5 * Double(provider)
        var original: [Double] = []
        var control: [Double] = []
        original.reserveCapacity(Self.samplesPerReplay)
        control.reserveCapacity(Self.samplesPerReplay)
        for sample in 0..<Self.samplesPerReplay {
            let n = normal(base + 8 + 4 * sample)
            original.append(Swift.max(0, throttled ? rate + 0.08 * n : cap + 0.2 * cap * n))
            control.append(Swift.max(0, cap + 0.2 * cap * normal(base + 208 + 4 * sample)))
        }
        return CrowdTestRecord(
            provider: "P\(provider)", replay: "R\(replay)", measurement: .samples(original: original, control: control))
    }
}

/// Generates `records` synthetic crowd test records (deterministic seed) and times the crowd-sourced analysis
/// over them, streaming: generation alone, then generation plus analysis. Prints the figures and the groups in
/// which throttling was found, to compare with `scripts/crowd_reference.py --records <same count>`.
func runCrowdBenchmark(records: Int, seed: UInt64 = 20_250_101) {
    let data = CrowdBenchmarkRecords(count: records, seed: seed)
    let clock = ContinuousClock()
    var checksum = 0.0
    let cpuStart = processorSeconds()
    let generation = clock.measure {
        for record in data {
            if case .samples(let original, _) = record.measurement { checksum += original[0] }
        }
    }
    let cpuGeneration = processorSeconds() - cpuStart
    var reports: [CrowdGroupReport] = []
    var failure: String?
    var groupPhase = 0.0
    let total = clock.measure {
        do {
            var analyzer = try CrowdAnalyzer(seed: seed)
            for record in data { analyzer.add(record) }
            let groupStart = processorSeconds()
            reports = try analyzer.finish()
            groupPhase = processorSeconds() - groupStart
        } catch {
            failure = "\(error)"
        }
    }
    let cpuTotal = processorSeconds() - cpuStart
    if let failure {
        print("crowd benchmark failed: \(failure)")
        return
    }
    let generationSeconds = seconds(generation)
    let totalSeconds = seconds(total)
    let analysisSeconds = totalSeconds - generationSeconds
    print("crowd analysis: \(records) records, \(reports.count) groups, seed \(seed)")
    print(
        String(
            format: "  generation only:        %8.2f s wall, %8.2f s CPU (checksum %.6f)", generationSeconds,
            cpuGeneration, checksum))
    print(String(format: "  generation + analysis:  %8.2f s wall, %8.2f s CPU", totalSeconds, cpuTotal))
    let cpuAnalysis = cpuTotal - cpuGeneration
    print(
        String(
            format: "  analysis (difference):  %8.2f s wall, %8.2f s CPU, %.1f µs CPU per record", analysisSeconds,
            cpuAnalysis, cpuAnalysis / Double(max(records, 1)) * 1e6))
    print(String(format: "  of which group phase (finish): %8.2f s CPU", groupPhase))
    let positives = reports.reduce(0) { $0 + $1.positiveTests }
    print("  positive tests: \(positives)")
    for report in reports where report.positiveTests > 0 || !report.rates.isEmpty {
        let rates = report.rates.map { String(format: "%.2f (%.2f-%.2f)", $0.rate, $0.lower, $0.upper) }
        print(
            "  \(report.provider)/\(report.replay): tests \(report.totalTests), positives \(report.positiveTests), "
                + "population p \(report.populationKSPValue.map { String(format: "%.3g", $0) } ?? "-"), "
                + "rates [\(rates.joined(separator: ", "))], true positives \(report.truePositives)")
    }
}

/// CPU time used by this process so far, seconds (the machine may be shared, so wall time alone misleads).
private func processorSeconds() -> Double {
    Double(clock()) / Double(CLOCKS_PER_SEC)
}

private func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) * 1e-18
}
