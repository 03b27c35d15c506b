public import WeheCore
import WeheStatistics

/// The WeHeY localization analysis: the throughput-sum test, the loss-correlation test and the combined verdict
/// (analysis.md sections 6.3-6.5), producing a `LocalizationSummary`.
///
/// Either test may be missing (no samples, too few intervals); the verdict then rests on the other one, and with
/// neither it is inconclusive with a note that says what was missing.
public struct LocalizationAnalyzer: Sendable {
    /// Inputs of one localization.
    public struct Input: Sendable, Hashable {
        /// Throughput samples (Mbit/s) of the earlier single-server test's original replay, if available.
        public var single: [Double]?
        /// Throughput samples of the simultaneous original replays to server 1 and server 2, if available.
        public var simultaneous: (first: [Double], second: [Double])?
        /// Loss data of the two simultaneous original replays, if available.
        public var loss: (first: LossBranch, second: LossBranch)?

        /// Creates an input.
        public init(
            single: [Double]?,
            simultaneous: (first: [Double], second: [Double])?,
            loss: (first: LossBranch, second: LossBranch)?
        ) {
            self.single = single
            self.simultaneous = simultaneous
            self.loss = loss
        }

        /// Inputs are equal when all their lists are.
        public static func == (lhs: Input, rhs: Input) -> Bool {
            lhs.single == rhs.single && lhs.simultaneous?.first == rhs.simultaneous?.first
                && lhs.simultaneous?.second == rhs.simultaneous?.second && lhs.loss?.first == rhs.loss?.first
                && lhs.loss?.second == rhs.loss?.second
        }

        /// Hashes all lists.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(single)
            hasher.combine(simultaneous?.first)
            hasher.combine(simultaneous?.second)
            hasher.combine(loss?.first)
            hasher.combine(loss?.second)
        }
    }

    /// The configuration in force.
    public let configuration: LocalizationConfiguration

    /// Creates an analyzer.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` for an invalid configuration.
    public init(configuration: LocalizationConfiguration = LocalizationConfiguration()) throws(WeheAnalysisError) {
        self.configuration = try configuration.validated()
    }

    /// The gate before localizing (analysis.md section 6.2 step 5): both per-server verdicts of the simultaneous
    /// replays must be differentiation. Returns the final `noEvidence` summary when they are not, `nil` to go on.
    public static func gate(server1: Verdict, server2: Verdict) -> LocalizationSummary? {
        guard server1 != .differentiation || server2 != .differentiation else { return nil }
        return LocalizationSummary(
            mwuStatistic: nil, mwuPValue: nil, simultaneousMeansMbps: [], sumMeanMbps: nil, singleMeanMbps: nil,
            intervalSizes: [], correlationPValues: [], averageLoss: [], verdict: .noEvidence,
            note: "differentiation did not occur with both servers (\(server1.rawValue), \(server2.rawValue))"
        )
    }

    /// Runs both tests and decides.
    /// - Throws: `WeheAnalysisError` for malformed samples or loss data (`.invalidSample`, `.invalidTimes`) and
    ///   `.statisticsFailed` if a statistics routine rejects its input.
    public func analyze<G: RandomNumberGenerator>(
        _ input: Input,
        using generator: inout G
    ) throws(WeheAnalysisError) -> LocalizationSummary {
        var notes: [String] = []
        var throughput: ThroughputSumTest.Result?
        if let single = input.single, let simultaneous = input.simultaneous {
            throughput = try ThroughputSumTest.run(
                single: single, first: simultaneous.first, second: simultaneous.second,
                rounds: configuration.monteCarloRounds, reference: configuration.referenceDifferences,
                using: &generator)
            if throughput == nil {
                notes.append("throughput-sum test skipped: too few throughput samples or no throughput")
            }
        } else {
            notes.append("throughput-sum test skipped: throughput samples missing")
        }

        var loss: LossCorrelationTest.Result?
        if let branches = input.loss {
            loss = try LossCorrelationTest.run(
                first: branches.first, second: branches.second, configuration: configuration.lossCorrelation)
            if let loss, loss.pValues.isEmpty {
                notes.append("loss-correlation test gave no p-value (no loss, or too few intervals with data)")
            } else if loss == nil {
                let rtt = max(branches.first.minimumRTT, branches.second.minimumRTT)
                let duration = min(branches.first.duration, branches.second.duration)
                notes.append(
                    "loss-correlation test skipped: no interval size of \(configuration.lossCorrelation.multiples) "
                        + "× \(rtt) s gives \(Int(configuration.lossCorrelation.minimumIntervals)) intervals in "
                        + "\(duration) s")
            }
        } else {
            notes.append("loss-correlation test skipped: loss data missing")
        }

        let decision = configuration.rules.decide(mwuPValue: throughput?.pValue, correlationPValues: loss?.pValues)
        return LocalizationSummary(
            mwuStatistic: throughput?.statistic, mwuPValue: throughput?.pValue,
            simultaneousMeansMbps: throughput?.simultaneousMeansMbps ?? [],
            sumMeanMbps: throughput?.sumMeanMbps, singleMeanMbps: throughput?.singleMeanMbps,
            intervalSizes: loss?.intervalSizes ?? [], correlationPValues: loss?.pValues ?? [],
            averageLoss: loss?.averageLoss ?? [], verdict: decision.verdict,
            note: notes.isEmpty ? nil : notes.joined(separator: "; ")
        )
    }

    /// Runs the analysis with a generator seeded by `seed`.
    /// - Throws: as `analyze(_:using:)`.
    public func analyze(_ input: Input, seed: UInt64) throws(WeheAnalysisError) -> LocalizationSummary {
        var generator = SeededGenerator(seed: seed)
        return try analyze(input, using: &generator)
    }
}
