public import WeheStatistics

/// The crowd-sourced fixed-rate throttling analysis (analysis.md sections 4.2-4.6), built to stream over millions of
/// tests.
///
/// Feed records one at a time with `add(_:)` (or hand a sequence to `analyze`). Each record's per-test work (means,
/// maxima, KS test, jackknife) happens on arrival and only a few scalars per test are kept, grouped by
/// (provider, replay). `finish()` then applies, per group:
/// * the size rule: analysed unless it has fewer than 100 tests *and* fewer than 10 positive tests;
/// * the per-test rule with Bonferroni correction: positive when the jackknife ratio is above 0.95, the KS p-value
///   (full lists, zeros included) is below `0.05 / N` and `|(m_R − m_O) / min(max O, max R)| > 0.1`;
/// * with more than 10 positives, the population step: KS test and jackknife ratio between the per-test original
///   and control means (p < 0.05 and ratio > 0.95);
/// * when the populations differ, the density search (`FixedRateSearch`) over all tests and over positive tests
///   only; the throttling rates are all-test peaks strictly inside a positive-test range; true positives are
///   positive tests whose original mean falls inside a detected range.
///
/// Because `N` is only known at the end, the Bonferroni test runs in `finish()`. The jackknife, the expensive part,
/// is computed on arrival only for tests that can still become positive (KS p < 0.05, which every Bonferroni
/// threshold implies, and a large enough difference); for the others it cannot change the outcome.
///
/// Not implemented: the delayed-throttling detection of section 4.4 (PELT change points, boost bytes). Means are
/// therefore computed over whole replays, as the reference does for providers other than T-Mobile. Grouping by
/// period (month, week…) is left to the caller, who can fold the period into the provider or replay name.
/// Records with malformed samples (empty list, negative or non-finite value) are counted as rejected and skipped.
public struct CrowdAnalyzer<Generator: RandomNumberGenerator> {
    /// The configuration in force.
    public let configuration: CrowdConfiguration
    private var generator: Generator
    private var groups: [GroupKey: Group] = [:]

    /// Number of records accepted so far.
    public private(set) var acceptedRecords = 0
    /// Number of records rejected so far.
    public private(set) var rejectedRecords = 0

    /// Creates an analyzer drawing its random subsets and simulations from `generator`.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for an invalid configuration.
    public init(configuration: CrowdConfiguration = CrowdConfiguration(), generator: Generator)
        throws(WeheAnalysisError)
    {
        self.configuration = try configuration.validated()
        self.generator = generator
    }

    /// Processes one record; returns whether it was accepted.
    @discardableResult
    public mutating func add(_ record: CrowdTestRecord) -> Bool {
        let key = GroupKey(provider: record.provider, replay: record.replay)
        let scalars: CrowdTestScalars?
        switch record.measurement {
        case .samples(let original, let control):
            scalars = Self.scalars(
                original: original, control: control, configuration: configuration,
                using: &generator)
        case .scalars(let given):
            let finite =
                given.originalMeanMbps.isFinite && given.controlMeanMbps.isFinite
                && !given.ksPValue.isNaN
            scalars = finite ? given : nil
        }
        guard let scalars else {
            groups[key, default: Group()].rejected += 1
            rejectedRecords += 1
            return false
        }
        let eligible =
            scalars.relativeDifference > configuration.differenceThreshold
            && (scalars.jackknifeRatio ?? 0) > configuration.ratioThreshold
        groups[key, default: Group()].append(
            originalMean: scalars.originalMeanMbps, controlMean: scalars.controlMeanMbps,
            ksPValue: scalars.ksPValue, eligible: eligible)
        acceptedRecords += 1
        return true
    }

    /// Applies the group-level steps and returns one report per group, sorted by provider then replay.
    /// - Throws: `WeheAnalysisError` with code `.statisticsFailed` if a statistics routine rejects its input.
    public mutating func finish() throws(WeheAnalysisError) -> [CrowdGroupReport] {
        var reports: [CrowdGroupReport] = []
        let keys = groups.keys.sorted { ($0.provider, $0.replay) < ($1.provider, $1.replay) }
        for key in keys {
            guard let group = groups[key] else { continue }
            reports.append(try report(for: key, group: group))
        }
        return reports
    }

    /// The per-test numbers of one test from its raw samples, or `nil` when the samples are malformed. The jackknife
    /// runs only when the test can still be positive (KS p < `familywiseAlpha` and a difference above the
    /// threshold).
    public static func scalars(
        original: [Double],
        control: [Double],
        configuration: CrowdConfiguration = CrowdConfiguration(),
        using generator: inout Generator
    ) -> CrowdTestScalars? {
        guard !original.isEmpty, !control.isEmpty,
            original.allSatisfy({ $0.isFinite && $0 >= 0 }), control.allSatisfy({ $0.isFinite && $0 >= 0 })
        else { return nil }
        var originalSum = 0.0
        var originalMax = 0.0
        for value in original {
            originalSum += value
            originalMax = max(originalMax, value)
        }
        var controlSum = 0.0
        var controlMax = 0.0
        for value in control {
            controlSum += value
            controlMax = max(controlMax, value)
        }
        let originalMean = originalSum / Double(original.count)
        let controlMean = controlSum / Double(control.count)
        let difference = abs((controlMean - originalMean) / min(originalMax, controlMax))
        guard let ks = try? KolmogorovSmirnov.twoSample(original, control) else { return nil }
        var ratio: Double?
        if difference > configuration.differenceThreshold && ks.pValue < configuration.familywiseAlpha {
            ratio =
                (try? Jackknife.compute(
                    original, control, fullPValue: ks.pValue, rounds: configuration.jackknifeRounds,
                    fraction: configuration.jackknifeFraction, pThreshold: configuration.jackknifePThreshold,
                    using: &generator))??.ratio
        }
        return CrowdTestScalars(
            originalMeanMbps: originalMean, controlMeanMbps: controlMean, relativeDifference: difference,
            ksPValue: ks.pValue, jackknifeRatio: ratio)
    }

    private mutating func report(for key: GroupKey, group: Group) throws(WeheAnalysisError) -> CrowdGroupReport {
        let total = group.ksPValues.count
        let threshold = configuration.familywiseAlpha / Double(max(total, 1))
        var positive: [Bool] = []
        positive.reserveCapacity(total)
        for index in 0..<total {
            positive.append(group.eligible[index] && group.ksPValues[index] < threshold)
        }
        let positiveCount = positive.filter { $0 }.count
        var report = CrowdGroupReport(
            provider: key.provider, replay: key.replay, totalTests: total, rejectedTests: group.rejected,
            positiveTests: positiveCount, analyzed: false, populationKSPValue: nil, populationRatio: nil,
            populationDiffers: nil, densityThreshold: nil, rates: [], truePositives: 0, note: nil)
        guard total >= configuration.minimumGroupTests || positiveCount >= configuration.minimumGroupPositives else {
            report.note = "too few tests (\(total)) and positive tests (\(positiveCount)) to analyse"
            return report
        }
        report.analyzed = true
        guard positiveCount > configuration.populationMinimumPositives else {
            report.note = "population step needs more than \(configuration.populationMinimumPositives) positive tests"
            return report
        }
        let ks: KolmogorovSmirnov.Result
        do {
            ks = try KolmogorovSmirnov.twoSample(group.originalMeans, group.controlMeans)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "population KS test failed: \(error.message)")
        }
        let ratio =
            try Jackknife.compute(
                group.originalMeans, group.controlMeans, fullPValue: ks.pValue, rounds: configuration.jackknifeRounds,
                fraction: configuration.jackknifeFraction, pThreshold: configuration.jackknifePThreshold,
                using: &generator)?.ratio ?? 0
        let differs = ks.pValue < configuration.populationPThreshold && ratio > configuration.ratioThreshold
        report.populationKSPValue = ks.pValue
        report.populationRatio = ratio
        report.populationDiffers = differs
        guard differs else {
            report.note = "original and control populations do not differ"
            return report
        }
        guard
            let all = FixedRateSearch.search(
                originalMeans: group.originalMeans, controlMeans: group.controlMeans,
                configuration: configuration.search, using: &generator)
        else { return report }
        report.densityThreshold = all.threshold
        var positiveOriginal: [Double] = []
        var positiveControl: [Double] = []
        for index in 0..<total where positive[index] {
            positiveOriginal.append(group.originalMeans[index])
            positiveControl.append(group.controlMeans[index])
        }
        let positiveSearch = FixedRateSearch.search(
            originalMeans: positiveOriginal, controlMeans: positiveControl, configuration: configuration.search,
            using: &generator)
        var rates: [CrowdGroupReport.Rate] = []
        for peak in all.peaks {
            guard let range = positiveSearch?.peaks.first(where: { $0.strictlyContains(peak.rate) }) else { continue }
            rates.append(CrowdGroupReport.Rate(rate: peak.rate, lower: range.lower, upper: range.upper))
        }
        report.rates = rates
        report.truePositives =
            positiveOriginal.filter { mean in
                rates.contains { $0.lower <= mean && mean <= $0.upper }
            }.count
        if rates.isEmpty {
            report.note = "no throughput rate specific to the original replays"
        }
        return report
    }

    private struct GroupKey: Hashable {
        var provider: String
        var replay: String
    }

    /// The per-test scalars of one group, struct-of-arrays to keep them compact.
    private struct Group {
        var originalMeans: [Double] = []
        var controlMeans: [Double] = []
        var ksPValues: [Double] = []
        var eligible: [Bool] = []
        var rejected = 0

        mutating func append(originalMean: Double, controlMean: Double, ksPValue: Double, eligible flag: Bool) {
            originalMeans.append(originalMean)
            controlMeans.append(controlMean)
            ksPValues.append(ksPValue)
            eligible.append(flag)
        }
    }
}

extension CrowdAnalyzer: Sendable where Generator: Sendable {}

extension CrowdAnalyzer where Generator == SeededGenerator {
    /// Creates an analyzer with a generator seeded by `seed`: the same records in the same order give the same
    /// reports.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for an invalid configuration.
    public init(configuration: CrowdConfiguration = CrowdConfiguration(), seed: UInt64) throws(WeheAnalysisError) {
        try self.init(configuration: configuration, generator: SeededGenerator(seed: seed))
    }

    /// Analyses a sequence of records.
    /// - Throws: `WeheAnalysisError` for an invalid configuration or a failing statistics routine.
    public static func analyze<Records: Sequence<CrowdTestRecord>>(
        _ records: Records,
        configuration: CrowdConfiguration = CrowdConfiguration(),
        seed: UInt64
    ) throws(WeheAnalysisError) -> [CrowdGroupReport] {
        var analyzer = try CrowdAnalyzer(configuration: configuration, seed: seed)
        for record in records {
            analyzer.add(record)
        }
        return try analyzer.finish()
    }

    /// Analyses an asynchronous sequence of records, such as rows streamed from a database.
    /// - Throws: the sequence's errors, and `WeheAnalysisError` for an invalid configuration or a failing
    ///   statistics routine.
    public static func analyze<Records: AsyncSequence>(
        _ records: Records,
        configuration: CrowdConfiguration = CrowdConfiguration(),
        seed: UInt64
    ) async throws -> [CrowdGroupReport] where Records.Element == CrowdTestRecord {
        var analyzer = try CrowdAnalyzer(configuration: configuration, seed: seed)
        for try await record in records {
            analyzer.add(record)
        }
        return try analyzer.finish()
    }
}
