import WeheStatistics

/// The per-test work of the crowd-sourced analysis, split so that all of it except the random draws can run in
/// parallel with identical results:
/// 1. `measure`: means, maxima and relative difference; the KS p-value only when the test can still be positive
///    (its difference is above the threshold; otherwise the per-test rule fails whatever the p-value);
/// 2. `JackknifeDraws`: the subset positions, the only use of the analyzer's generator, drawn in record order
///    exactly as `Jackknife.compute` draws them;
/// 3. `jackknifeAgrees`: the subset KS tests, deciding `ratio > ratioThreshold` (stopping as soon as the remaining
///    rounds cannot change the decision).
enum CrowdTestEvaluation {
    /// Means, maxima and the relative difference of one test.
    struct Means: Sendable {
        var originalMean: Double
        var controlMean: Double
        /// `|(m_R − m_O) / min(max O, max R)|`.
        var difference: Double
    }

    /// What `measure` learns about one record.
    struct Measurement: Sendable {
        var originalMean: Double
        var controlMean: Double
        /// The KS p-value of a test that passes every per-test condition except the Bonferroni threshold, or of one
        /// whose eligibility waits for the jackknife (`needsJackknife`); `nil` for tests that cannot be positive.
        var candidatePValue: Double?
        /// Whether eligibility depends on the jackknife ratio (raw samples with a large difference and KS p < α).
        var needsJackknife: Bool
    }

    /// The reused buffers of `jackknifeAgrees`: both lists sorted, the rank of every position, a bit set of picked
    /// ranks, and the two subsets.
    struct Workspace: Sendable {
        private var firstSorted: [Double] = []
        private var secondSorted: [Double] = []
        private var firstRanks: [Int] = []
        private var secondRanks: [Int] = []
        private var bits: [UInt64] = []
        fileprivate var firstSubset: [Double] = []
        fileprivate var secondSubset: [Double] = []

        /// Sorts both lists once and sizes the subset buffers.
        fileprivate mutating func load(original: [Double], control: [Double], draws: JackknifeDraws) {
            Self.rank(original, sorted: &firstSorted, ranks: &firstRanks)
            Self.rank(control, sorted: &secondSorted, ranks: &secondRanks)
            if firstSubset.count != draws.firstCount { firstSubset = [Double](repeating: 0, count: draws.firstCount) }
            if secondSubset.count != draws.secondCount {
                secondSubset = [Double](repeating: 0, count: draws.secondCount)
            }
        }

        private static func rank(_ values: [Double], sorted: inout [Double], ranks: inout [Int]) {
            let order = values.indices.sorted { values[$0] < values[$1] }
            sorted.removeAll(keepingCapacity: true)
            ranks = [Int](repeating: 0, count: values.count)
            for (rank, position) in order.enumerated() {
                sorted.append(values[position])
                ranks[position] = rank
            }
        }

        /// Fills the subset buffers, in ascending order, with the values at the picked positions of one round: the
        /// picks are marked in a bit set of ranks, whose set bits are then read in order (no sorting per round).
        fileprivate mutating func gatherRound(_ round: Int, of draws: JackknifeDraws) {
            let base = round * (draws.firstCount + draws.secondCount)
            draws.positions.withUnsafeBufferPointer { positions in
                Self.gather(
                    UnsafeBufferPointer(rebasing: positions[base..<(base + draws.firstCount)]), ranks: firstRanks,
                    sorted: firstSorted, bits: &bits, into: &firstSubset)
                Self.gather(
                    UnsafeBufferPointer(
                        rebasing: positions[(base + draws.firstCount)..<(base + draws.firstCount + draws.secondCount)]),
                    ranks: secondRanks, sorted: secondSorted, bits: &bits, into: &secondSubset)
            }
        }

        private static func gather(
            _ positions: UnsafeBufferPointer<Int>, ranks: [Int], sorted: [Double], bits: inout [UInt64],
            into subset: inout [Double]
        ) {
            let words = (sorted.count + 63) / 64
            if bits.count < words { bits = [UInt64](repeating: 0, count: words) }
            for position in positions {
                let rank = ranks[position]
                bits[rank >> 6] |= 1 << UInt64(rank & 63)
            }
            var filled = 0
            for index in 0..<words {
                var word = bits[index]
                bits[index] = 0
                while word != 0 {
                    subset[filled] = sorted[index << 6 | word.trailingZeroBitCount]
                    filled += 1
                    word &= word &- 1
                }
            }
        }
    }

    /// Single pass over each list: validation (non-empty, finite, ≥ 0), sum in list order, maximum. `nil` for
    /// malformed samples.
    static func means(original: [Double], control: [Double]) -> Means? {
        guard let (originalSum, originalMax) = sumAndMaximum(original),
            let (controlSum, controlMax) = sumAndMaximum(control)
        else { return nil }
        let originalMean = originalSum / Double(original.count)
        let controlMean = controlSum / Double(control.count)
        let difference = abs((controlMean - originalMean) / min(originalMax, controlMax))
        return Means(originalMean: originalMean, controlMean: controlMean, difference: difference)
    }

    private static func sumAndMaximum(_ values: [Double]) -> (sum: Double, maximum: Double)? {
        guard !values.isEmpty else { return nil }
        var sum = 0.0
        var maximum = 0.0
        for value in values {
            guard value.isFinite, value >= 0 else { return nil }
            sum += value
            maximum = max(maximum, value)
        }
        return (sum, maximum)
    }

    /// Step 1 for one record; `nil` when the record is rejected (malformed samples or non-finite scalars).
    static func measure(_ record: CrowdTestRecord, configuration: CrowdConfiguration) -> Measurement? {
        switch record.measurement {
        case .samples(let original, let control):
            guard let means = means(original: original, control: control) else { return nil }
            var measurement = Measurement(
                originalMean: means.originalMean, controlMean: means.controlMean, candidatePValue: nil,
                needsJackknife: false)
            guard means.difference > configuration.differenceThreshold else { return measurement }
            guard let ks = try? KolmogorovSmirnov.twoSample(original, control) else { return nil }
            if ks.pValue < configuration.familywiseAlpha {
                measurement.candidatePValue = ks.pValue
                measurement.needsJackknife = true
            }
            return measurement
        case .scalars(let given):
            guard given.originalMeanMbps.isFinite, given.controlMeanMbps.isFinite, !given.ksPValue.isNaN else {
                return nil
            }
            let eligible =
                given.relativeDifference > configuration.differenceThreshold
                && (given.jackknifeRatio ?? 0) > configuration.ratioThreshold
            return Measurement(
                originalMean: given.originalMeanMbps, controlMean: given.controlMeanMbps,
                candidatePValue: eligible ? given.ksPValue : nil, needsJackknife: false)
        }
    }

    /// Step 2: the subset positions of every jackknife round.
    struct JackknifeDraws: Sendable {
        /// Subset sizes and number of rounds.
        let firstCount: Int
        let secondCount: Int
        let rounds: Int
        /// Round r occupies `r·(firstCount + secondCount) ..< (r + 1)·(firstCount + secondCount)`: the positions
        /// picked from the original list, then those picked from the control list.
        private(set) var positions: [Int]

        /// Number of stored positions for lists of these sizes (0 when no jackknife would run).
        static func positionCount(firstSize: Int, secondSize: Int, configuration: CrowdConfiguration) -> Int {
            let (firstCount, secondCount) = subsetSizes(firstSize, secondSize, configuration)
            guard firstCount > 0, secondCount > 0 else { return 0 }
            return configuration.jackknifeRounds * (firstCount + secondCount)
        }

        private static func subsetSizes(
            _ firstSize: Int, _ secondSize: Int, _ configuration: CrowdConfiguration
        ) -> (Int, Int) {
            (
                Int((Double(firstSize) * configuration.jackknifeFraction).rounded(.down)),
                Int((Double(secondSize) * configuration.jackknifeFraction).rounded(.down))
            )
        }

        /// Draws like `Jackknife.compute` (same calls, same order); `nil`, without touching the generator, where
        /// that returns `nil` (a subset would be empty).
        init?<G: RandomNumberGenerator>(
            firstSize: Int, secondSize: Int, configuration: CrowdConfiguration, using generator: inout G
        ) {
            let (firstCount, secondCount) = Self.subsetSizes(firstSize, secondSize, configuration)
            let rounds = configuration.jackknifeRounds
            guard firstCount > 0, secondCount > 0, rounds > 0 else { return nil }
            self.firstCount = firstCount
            self.secondCount = secondCount
            self.rounds = rounds
            var positions: [Int] = []
            positions.reserveCapacity((rounds - 1) * (firstCount + secondCount) + max(firstSize, secondSize))
            for _ in 0..<rounds {
                Sampling.appendPositions(count: firstCount, from: firstSize, to: &positions, using: &generator)
                Sampling.appendPositions(count: secondCount, from: secondSize, to: &positions, using: &generator)
            }
            self.positions = positions
        }
    }

    /// Step 3: whether the jackknife ratio of `Jackknife.compute` on these draws would be above
    /// `configuration.ratioThreshold`. The ratio `agreeing/rounds` only grows with `agreeing`, so the loop stops as
    /// soon as the decision is the same for every outcome of the remaining rounds. A KS failure (impossible for
    /// validated samples) counts as no ratio, as in `CrowdAnalyzer.scalars`.
    static func jackknifeAgrees(
        original: [Double], control: [Double], draws: JackknifeDraws, fullPValue: Double,
        configuration: CrowdConfiguration, workspace: inout Workspace
    ) -> Bool {
        let rounds = draws.rounds
        let total = Double(rounds)
        let threshold = configuration.ratioThreshold
        let pThreshold = configuration.jackknifePThreshold
        let same = fullPValue >= pThreshold
        workspace.load(original: original, control: control, draws: draws)
        var agreeing = 0
        for round in 0..<rounds {
            if Double(agreeing) / total > threshold { return true }
            if !(Double(agreeing + rounds - round) / total > threshold) { return false }
            workspace.gatherRound(round, of: draws)
            let result = workspace.firstSubset.withUnsafeBufferPointer { first in
                workspace.secondSubset.withUnsafeBufferPointer { second in
                    try? KolmogorovSmirnov.twoSample(sortedFirst: first, sortedSecond: second)
                }
            }
            guard let pValue = result?.pValue else { return 0 > threshold }
            if same ? pValue > pThreshold : pValue < pThreshold {
                agreeing += 1
            }
        }
        return Double(agreeing) / total > threshold
    }
}
