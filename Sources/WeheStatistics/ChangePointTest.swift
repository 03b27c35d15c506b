/// A change in time of the app-versus-control effect: the max-over-splits sign-flip test on rounds
/// of per-bin log ratios, and the byte grid that turns a replay's throughput samples into those bins.
///
/// **Byte grid.** Both replays of a round carry the same trace, so the n-th byte of the original and the n-th byte of
/// the control are the same point of the trace. `deliveryTimes` gives, for each edge of a grid of byte positions,
/// the time at which a replay had received that many bytes (linear inside each sample interval); bin `k`'s duration
/// is the difference of two edges. Per round and bin, `xₖ = ln(control's duration / original's duration)`, the log
/// ratio of the original's rate to the control's over the same bytes (negative: the app was slower there). A slowed
/// original takes longer and yields more samples, so aligning by time would compare different parts of the trace;
/// aligning by bytes does not, and the change's position is directly "after how many bytes". TCP slow start and the
/// end of the transfer fall on the same bytes of both replays and cancel in `xₖ`.
///
/// **Statistic.** For a split `s` (bins `1…s` before, `s+1…K` after, both at least `minimumSegment` long) each
/// round's contrast is `D_r(s) = mean(x_{r,1…s}) − mean(x_{r,s+1…K})`; a constant effect cancels in it. With signs
/// `ε_r`, `t(s; ε) = w(s) · |Σ ε_r D_r(s)| / R` with the CUSUM weight `w(s) = √(s(K − s))/K`, and
/// `T(ε) = max_s t(s; ε)`. The observed statistic is `T(+1, …, +1)`, and its split, the first `s` that attains it,
/// is the least-squares change point of the rounds' mean log ratios (`w(s)²·(mean before − mean after)²·K` is the
/// drop in their sum of squares). A self-normalised `Σ ε_r D_r / √(Σ D_r²)` was tried first: it saturates at `√R`
/// whenever the rounds agree, over many splits, and placed a change at 3 MB up to 0.7 MB off in the golden cases.
///
/// **p-value.** Under no differentiation the coin that ordered each round's replays makes swapping a round's
/// original and control, which negates its `x_{r,·}` and every `D_r(s)`, equally likely; so all `2^R` sign vectors
/// are equally likely and `p = #{ε : T(ε) ≥ T_obs − 10⁻⁹} / 2^R` is exact, the search over splits included (the
/// maximum is taken inside every sign vector). Under a constant throttle the contrasts do not see the constant, and the test holds as far as each round's contrast is
/// symmetric. The sums are updated in Gray-code order; `scripts/golden_statistics.py` recomputes them by matrix
/// products, equal up to the tolerance.
public enum ChangePointTest {
    /// The most rounds enumerated (`2¹⁶` sign vectors times the splits).
    public static let maximumRounds = 16

    /// The outcome of one test.
    public struct Result: Sendable, Hashable {
        /// Bins before the change (the split `s`, in `minimumSegment…bins − minimumSegment`).
        public var split: Int
        /// `T_obs = max_s t(s)` (a weighted contrast of mean log ratios).
        public var statistic: Double
        /// The exact p-value.
        public var pValue: Double
        /// The mean over rounds of `D_r(split)`: the log ratio before minus after (negative: the app was slower
        /// before the change than after it, relative to the control).
        public var contrast: Double
        /// Rounds in the test.
        public var rounds: Int
        /// Bins per round.
        public var bins: Int
        /// The shortest segment allowed, in bins.
        public var minimumSegment: Int
        /// `2/2^R`: the smallest p-value this many rounds can give (`T(ε) = T(−ε)`).
        public var smallestPossiblePValue: Double
    }

    /// The shortest segment for `bins` bins: at least `fraction` of them and at least `atLeast`.
    public static func minimumSegment(bins: Int, fraction: Double = 0.1, atLeast: Int = 5) -> Int {
        max(atLeast, Int((fraction * Double(bins)).rounded(.up)))
    }

    /// Received megabytes (10⁶ bytes) at the end of each sample: `Σ mbpsⱼ·(tⱼ − tⱼ₋₁)/8`, left to right, `t₀ = 0`.
    public static func cumulativeMegabytes(mbps: [Double], times: [Double]) -> [Double] {
        var total = 0.0
        var previous = 0.0
        var cumulative: [Double] = []
        cumulative.reserveCapacity(mbps.count)
        for (rate, time) in zip(mbps, times) {
            total += rate * (time - previous) / 8
            previous = time
            cumulative.append(total)
        }
        return cumulative
    }

    /// The time (s) at which the replay had received `megabytes`, linear inside a sample interval; 0 for 0 bytes,
    /// `nil` beyond the replay's total. `cumulative` is `cumulativeMegabytes` of the same samples.
    public static func deliveryTime(of megabytes: Double, cumulative: [Double], times: [Double]) -> Double? {
        guard megabytes > 0 else { return 0 }
        var before = 0.0
        var start = 0.0
        for (total, time) in zip(cumulative, times) {
            if total >= megabytes {
                return start + (megabytes - before) / (total - before) * (time - start)
            }
            before = total
            start = time
        }
        return nil
    }

    /// The duration of each of `bins` equal byte bins of `0…megabytes` (edges `megabytes·k/bins`); `nil` when the
    /// replay received fewer bytes.
    public static func binDurations(mbps: [Double], times: [Double], megabytes: Double, bins: Int) -> [Double]? {
        let cumulative = cumulativeMegabytes(mbps: mbps, times: times)
        var durations: [Double] = []
        durations.reserveCapacity(bins)
        var previous = 0.0
        // One pass (the edges increase); the same arithmetic as `deliveryTime`.
        var index = 0
        var before = 0.0
        var start = 0.0
        for edge in 1...max(bins, 1) {
            let position = edge == bins ? megabytes : megabytes * Double(edge) / Double(bins)
            while index < cumulative.count, cumulative[index] < position {
                before = cumulative[index]
                start = times[index]
                index += 1
            }
            guard index < cumulative.count else { return nil }
            let time = start + (position - before) / (cumulative[index] - before) * (times[index] - start)
            durations.append(time - previous)
            previous = time
        }
        return durations
    }

    /// Runs the test on `rounds` rows of per-bin log ratios (all rows the same length `K`).
    /// - Throws: `StatisticsError` `.emptySample` (no round), `.nonFiniteValue`, `.invalidArgument` (rows of
    ///   different lengths, more than `maximumRounds` rounds, or `K < 2·minimumSegment`).
    public static func test(_ rounds: [[Double]], minimumSegment: Int) throws(StatisticsError) -> Result {
        guard let bins = rounds.first?.count else { throw StatisticsError(.emptySample, "no round") }
        guard rounds.count <= maximumRounds else {
            throw StatisticsError(.invalidArgument, "\(rounds.count) rounds: at most \(maximumRounds) are enumerated")
        }
        for (index, row) in rounds.enumerated() {
            guard row.count == bins else {
                throw StatisticsError(.invalidArgument, "round \(index) has \(row.count) bins, not \(bins)")
            }
            try Validation.requireFinite(row, "round \(index)")
        }
        guard minimumSegment >= 1, bins >= 2 * minimumSegment else {
            throw StatisticsError(
                .invalidArgument, "\(bins) bins cannot hold two segments of \(minimumSegment)")
        }
        let splits = Array(minimumSegment...(bins - minimumSegment))
        // contrasts[r][j]: D_r(splits[j]).
        let contrasts = rounds.map { row -> [Double] in
            var prefix = [0.0]
            prefix.reserveCapacity(bins + 1)
            for value in row { prefix.append(prefix[prefix.count - 1] + value) }
            return splits.map { split in
                prefix[split] / Double(split) - (prefix[bins] - prefix[split]) / Double(bins - split)
            }
        }
        let weights = splits.map { split in
            (Double(split) * Double(bins - split)).squareRoot() / Double(bins) / Double(rounds.count)
        }
        var sums = splits.indices.map { j in
            var sum = 0.0
            for row in contrasts { sum += row[j] }
            return sum
        }
        func maximum(_ sums: [Double]) -> (value: Double, index: Int) {
            var best = 0.0
            var index = 0
            for j in sums.indices {
                let value = abs(sums[j]) * weights[j]
                if value > best {
                    best = value
                    index = j
                }
            }
            return (best, index)
        }
        let observed = maximum(sums)
        let threshold = observed.value - 1e-9
        // Gray code: step g flips the sign of round (trailing zeros of g); sign vector 0 is the observed one.
        var signs = [Double](repeating: 1, count: rounds.count)
        var count = 1
        let total = 1 << rounds.count
        let width = splits.count
        let flat = contrasts.flatMap { $0 }
        sums.withUnsafeMutableBufferPointer { sums in
            flat.withUnsafeBufferPointer { flat in
                weights.withUnsafeBufferPointer { weights in
                    for step in 1..<max(total, 1) {
                        let round = step.trailingZeroBitCount
                        let change = -2 * signs[round]
                        signs[round] = -signs[round]
                        let offset = round * width
                        var reached = false
                        for j in 0..<width {
                            sums[j] += change * flat[offset + j]
                            if !reached, abs(sums[j]) * weights[j] >= threshold { reached = true }
                        }
                        if reached { count += 1 }
                    }
                }
            }
        }
        let contrast = contrasts.reduce(0) { $0 + $1[observed.index] } / Double(rounds.count)
        return Result(
            split: splits[observed.index], statistic: observed.value, pValue: Double(count) / Double(total),
            contrast: contrast, rounds: rounds.count, bins: bins, minimumSegment: minimumSegment,
            smallestPossiblePValue: min(1, 2 / Double(total)))
    }
}
