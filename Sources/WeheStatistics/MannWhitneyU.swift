/// The Mann-Whitney U test with the semantics of SciPy 1.17 `mannwhitneyu`.
///
/// `U1` is the rank sum of `x` in the pooled sample (average ranks for ties) minus `n1(n1 + 1)/2`, and
/// `U2 = n1·n2 − U1`. `.greater` tests whether `x` tends to be larger than `y` and uses the upper tail of `U1`;
/// `.less` uses the upper tail of `U2`; `.twoSided` doubles the upper tail of `max(U1, U2)` (capped at 1).
public enum MannWhitneyU {
    /// How the p-value is computed.
    public enum Method: Sendable, Hashable {
        /// Exact when at least one sample has at most 8 values and there are no ties, asymptotic otherwise.
        case auto
        /// The exact null distribution of U (not corrected for ties; a non-integer U is truncated, as SciPy does).
        case exact
        /// The normal approximation with tie-corrected σ and, optionally, the continuity correction.
        case asymptotic
    }

    /// The outcome of a test.
    public struct Result: Sendable, Hashable {
        /// `U1`, the statistic of `x` (SciPy's reported statistic whatever the alternative).
        public var u1: Double
        /// The p-value in [0, 1]; NaN only for the asymptotic method without continuity correction when every
        /// pooled value is equal (σ = 0), as in SciPy.
        public var pValue: Double
        /// The method actually used: `.exact` or `.asymptotic`, never `.auto`.
        public var method: Method

        /// Creates a result.
        public init(u1: Double, pValue: Double, method: Method) {
            self.u1 = u1
            self.pValue = pValue
            self.method = method
        }
    }

    /// The largest sample size for which `.auto` may pick the exact method.
    public static let largestAutoExactSize = 8

    /// Tests `x` against `y`.
    /// - Parameters:
    ///   - continuity: subtract ½ from `U − n1·n2/2` in the normal approximation (SciPy's `use_continuity`).
    /// - Throws: `emptySample` when either sample is empty, `nonFiniteValue` for NaN or infinite values.
    public static func test(
        _ x: [Double], _ y: [Double], alternative: Alternative, method: Method = .auto, continuity: Bool = true
    ) throws(StatisticsError) -> Result {
        try Validation.requireFiniteNonEmpty(x, "first sample")
        try Validation.requireFiniteNonEmpty(y, "second sample")
        let n1 = x.count
        let n2 = y.count
        let (ranks, tieSizes) = Descriptive.rankWithTies(x + y)
        var rankSum = CompensatedSum()
        for rank in ranks[0..<n1] { rankSum.add(rank) }
        let product = Double(n1) * Double(n2)
        let u1 = rankSum.total - Double(n1) * Double(n1 + 1) / 2
        let u2 = product - u1

        let statistic: Double
        let factor: Double
        switch alternative {
        case .greater: (statistic, factor) = (u1, 1)
        case .less: (statistic, factor) = (u2, 1)
        case .twoSided: (statistic, factor) = (max(u1, u2), 2)
        }

        var resolved = method
        if method == .auto {
            let hasTies = tieSizes.contains { $0 > 1 }
            resolved = (n1 > largestAutoExactSize && n2 > largestAutoExactSize) || hasTies ? .asymptotic : .exact
        }
        let tail: Double
        if resolved == .exact {
            tail = exactUpperTail(Int(statistic), n1, n2)
        } else {
            var tieTerm = 0.0
            for size in tieSizes where size > 1 {
                let t = Double(size)
                tieTerm += t * t * t - t
            }
            let n = Double(n1 + n2)
            let sigma = (product / 12 * ((n + 1) - tieTerm / (n * (n - 1)))).squareRoot()
            var numerator = statistic - product / 2
            if continuity { numerator -= 0.5 }
            tail = NormalDistribution.survival(numerator / sigma)
        }
        let pValue = tail * factor
        return Result(u1: u1, pValue: pValue.isNaN ? pValue : min(max(pValue, 0), 1), method: resolved)
    }

    /// `P(U ≥ u)` under the null hypothesis for sample sizes `n1`, `n2` (U takes the values 0…n1·n2).
    ///
    /// The distribution of U has the generating function `[n1 + n2 choose n1]_q / C(n1 + n2, n1)` (a Gaussian
    /// binomial coefficient). It is built one factor at a time, `[b + i choose i]_q = [b + i − 1 choose i − 1]_q ·
    /// (1 − q^(b+i))/(1 − q^i)`, normalised at every step so that the coefficients stay probabilities, and truncated
    /// at the degree needed. As SciPy does, the shorter tail is summed: `P(U ≥ u) = P(U ≤ n1·n2 − u)`.
    public static func exactUpperTail(_ u: Int, _ n1: Int, _ n2: Int) -> Double {
        let total = n1 * n2
        if u <= 0 { return 1 }
        if u > total { return 0 }
        let complement = total - u
        if u < complement {
            let pmf = exactDistribution(upTo: u, n1, n2)
            var below = CompensatedSum()
            for value in pmf[0..<u] { below.add(value) }
            return 1 - below.total
        }
        let pmf = exactDistribution(upTo: complement, n1, n2)
        var tail = CompensatedSum()
        for value in pmf { tail.add(value) }
        return tail.total
    }

    /// `P(U = k)` for k = 0…degree.
    static func exactDistribution(upTo degree: Int, _ n1: Int, _ n2: Int) -> [Double] {
        let shorter = min(n1, n2)
        let longer = max(n1, n2)
        var coefficients = [Double](repeating: 0, count: degree + 1)
        coefficients[0] = 1
        guard shorter > 0 else { return coefficients }
        for i in 1...shorter {
            let shift = longer + i
            if shift <= degree {
                for k in stride(from: degree, through: shift, by: -1) { coefficients[k] -= coefficients[k - shift] }
            }
            if i <= degree {
                for k in i...degree { coefficients[k] += coefficients[k - i] }
            }
            let scale = Double(i) / Double(shift)
            for k in 0...degree { coefficients[k] *= scale }
        }
        return coefficients
    }
}
