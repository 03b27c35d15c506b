/// The two-sample Kolmogorov-Smirnov test, two-sided, with the defaults of SciPy 1.17 `ks_2samp`.
///
/// `D` is the largest distance between the two empirical distribution functions, evaluated at every pooled value
/// so that ties are handled. The exact p-value is `P(D' ≥ D)` for two samples of the same sizes drawn from one
/// continuous distribution (analysis.md §2.3): a reflection sum in O(n) for equal sizes, a sum over first exit
/// points of the lattice in O(n1·n2) otherwise; both keep the relative accuracy of tiny p-values such as
/// `2/C(200, 100) ≈ 2.2e-59`.
public enum KolmogorovSmirnov {
    /// How the p-value is computed.
    public enum Method: Sendable, Hashable {
        /// Exact when the larger sample has at most 10 000 values, asymptotic otherwise (SciPy `auto`).
        case auto
        /// The exact lattice-path probability. Falls back to `.asymptotic` when
        /// `n1/g ≥ (2³¹ − 1)/(n2/g)` (g = gcd(n1, n2)), as SciPy does.
        case exact
        /// SciPy's `asymp`: the one-sample two-sided Kolmogorov distribution for `n = round(n1·n2/(n1 + n2))`.
        case asymptotic
        /// `.auto` with a bound on the exact method's cost: unequal sizes use the exact O(n1·n2) lattice sum only
        /// while `n1·n2 ≤ exactCells`, and `.asymptotic` beyond. Equal sizes keep the exact O(n) reflection sum
        /// (up to `.auto`'s size limit). For callers whose sample counts come from untrusted input (the server's
        /// analysis: `analysisExactCells`).
        case bounded(exactCells: Int)
    }

    /// The bound on `n1·n2` of `.bounded` used by the differentiation analysis: 1 000 000, the exact p-value for
    /// every pair of sizes up to 1000 × 1000 (real tests have a few hundred samples, 100 for the published clients,
    /// about 560 for ours; the jackknife halves them), the asymptotic one beyond. The exact lattice sum is linear in
    /// n1·n2 (0.32 s at 10 000 × 9 999, release build, one core), so the bound caps it about a hundred times lower;
    /// the asymptotic p-value agrees with the exact one within 0.01 near the bound (`KolmogorovSmirnovBoundTests`).
    public static let analysisExactCells = 1_000_000

    /// The outcome of a test.
    public struct Result: Sendable, Hashable {
        /// `D`. With the exact method it is `h/L`, the distance rounded to the lattice of multiples of
        /// `1/lcm(n1, n2)`, as SciPy reports it.
        public var statistic: Double
        /// The two-sided p-value in [0, 1]. NaN only for the asymptotic method with `n1 = n2 = 1`, where
        /// `round(n1·n2/(n1 + n2)) = 0` (SciPy also returns NaN).
        public var pValue: Double
        /// The method actually used: `.exact` or `.asymptotic`, never `.auto` or `.bounded`.
        public var method: Method

        /// Creates a result.
        public init(statistic: Double, pValue: Double, method: Method) {
            self.statistic = statistic
            self.pValue = pValue
            self.method = method
        }
    }

    /// The largest sample size for which `.auto` picks the exact method.
    public static let largestAutoExactSize = 10_000

    /// Two-sided two-sample KS test of `a` against `b`.
    /// - Throws: `emptySample` when either sample is empty, `nonFiniteValue` for NaN or infinite values.
    public static func twoSample(
        _ a: [Double], _ b: [Double], method: Method = .auto
    ) throws(StatisticsError) -> Result {
        try Validation.requireFiniteNonEmpty(a, "first sample")
        try Validation.requireFiniteNonEmpty(b, "second sample")
        let sortedA = a.sorted()
        let sortedB = b.sorted()
        return sortedA.withUnsafeBufferPointer { first in
            sortedB.withUnsafeBufferPointer { second in
                validatedTest(first, second, method: method)
            }
        }
    }

    /// The same test on two samples already sorted ascending, for callers that run many tests on reused buffers
    /// (the jackknife). Gives exactly the result of `twoSample(_:_:method:)` on the same values in any order.
    /// - Throws: `emptySample` when either sample is empty, `nonFiniteValue` for NaN or infinite values,
    ///   `invalidArgument` when a sample is not sorted ascending.
    public static func twoSample(
        sortedFirst a: UnsafeBufferPointer<Double>, sortedSecond b: UnsafeBufferPointer<Double>,
        method: Method = .auto
    ) throws(StatisticsError) -> Result {
        try requireSortedFinite(a, "first sample")
        try requireSortedFinite(b, "second sample")
        return validatedTest(a, b, method: method)
    }

    /// Throws unless `sample` is non-empty, finite and sorted ascending.
    private static func requireSortedFinite(
        _ sample: UnsafeBufferPointer<Double>, _ name: String
    ) throws(StatisticsError) {
        guard var previous = sample.first else { throw StatisticsError(.emptySample, "\(name) is empty") }
        for index in sample.indices {
            let value = sample[index]
            guard value.isFinite else {
                throw StatisticsError(.nonFiniteValue, "\(name)[\(index)] is not finite (\(value))")
            }
            guard value >= previous else {
                throw StatisticsError(.invalidArgument, "\(name) is not sorted ascending at index \(index)")
            }
            previous = value
        }
    }

    /// The test on two sorted, finite, non-empty samples.
    private static func validatedTest(
        _ a: UnsafeBufferPointer<Double>, _ b: UnsafeBufferPointer<Double>, method: Method
    ) -> Result {
        let n1 = a.count
        let n2 = b.count
        let g = SpecialFunctions.gcd(n1, n2)
        var resolved = method
        switch method {
        case .auto:
            resolved = max(n1, n2) <= largestAutoExactSize ? .exact : .asymptotic
        case .exact:
            if Double(n1 / g) >= Double(Int32.max) / Double(n2 / g) { resolved = .asymptotic }
        case .asymptotic:
            break
        case .bounded(let exactCells):
            let small = max(n1, n2) <= largestAutoExactSize
            let cells = n1.multipliedReportingOverflow(by: n2)
            resolved =
                small && (n1 == n2 || (!cells.overflow && cells.partialValue <= exactCells)) ? .exact : .asymptotic
        }
        let distance = Distance(a, b)
        if resolved == .exact {
            let lattice = (n1 / g) * n2
            let pValue = exactPValue(n1, n2, latticeDistance: distance.latticeSteps)
            return Result(statistic: Double(distance.latticeSteps) / Double(lattice), pValue: pValue, method: .exact)
        }
        let (larger, smaller) = (Double(max(n1, n2)), Double(min(n1, n2)))
        let effectiveSize = (larger * smaller / (larger + smaller)).rounded(.toNearestOrEven)
        let pValue =
            effectiveSize < 1 ? .nan : kolmogorovSurvival(distance.value, sampleSize: Int(effectiveSize))
        return Result(statistic: distance.value, pValue: pValue, method: .asymptotic)
    }

    /// The two-sided statistic `D` of two sorted, non-empty samples in two forms.
    struct Distance {
        /// `D` from floating-point distribution functions, as SciPy computes it.
        var value: Double
        /// `D·lcm(n1, n2)`, an exact integer.
        var latticeSteps: Int

        /// Walks both ascending samples once, evaluating both distribution functions after every distinct value.
        init(_ a: UnsafeBufferPointer<Double>, _ b: UnsafeBufferPointer<Double>) {
            let n1 = a.count
            let n2 = b.count
            let g = SpecialFunctions.gcd(n1, n2)
            let stepA = n2 / g
            let stepB = n1 / g
            var i = 0
            var j = 0
            var largestAbove = 0.0
            var largestBelow = 0.0
            var largestSteps = 0
            while i < n1 || j < n2 {
                let value = i < n1 && (j >= n2 || a[i] <= b[j]) ? a[i] : b[j]
                while i < n1, a[i] == value { i += 1 }
                while j < n2, b[j] == value { j += 1 }
                let difference = Double(i) / Double(n1) - Double(j) / Double(n2)
                largestAbove = max(largestAbove, difference)
                largestBelow = max(largestBelow, -difference)
                largestSteps = max(largestSteps, abs(i * stepA - j * stepB))
            }
            value = largestBelow > largestAbove ? largestBelow : largestAbove
            latticeSteps = largestSteps
        }
    }
}
