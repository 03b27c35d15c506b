/// Spearman's rank correlation with the semantics of SciPy 1.17 `spearmanr` for two 1-D samples.
///
/// ρ is the Pearson correlation of the average ranks, evaluated in NumPy's `corrcoef` order of operations so that
/// perfectly (anti-)correlated ranks give exactly what SciPy gives. The p-value uses
/// `t = ρ·√((n − 2)/((1 + ρ)(1 − ρ)))` against Student's t with n − 2 degrees of freedom (t = ±∞ when ρ = ±1).
public enum Spearman {
    /// The outcome of a correlation.
    public struct Result: Sendable, Hashable {
        /// Spearman's ρ in [−1, 1]; NaN when either input is constant or has a single value.
        public var rho: Double
        /// The p-value; NaN when ρ is NaN or with exactly two observations (no degrees of freedom), as in SciPy.
        public var pValue: Double

        /// Creates a result.
        public init(rho: Double, pValue: Double) {
            self.rho = rho
            self.pValue = pValue
        }
    }

    /// Correlates `x` with `y` (paired by index).
    /// - Parameter alternative: `.greater` tests for a positive correlation, `.less` for a negative one.
    /// - Throws: `emptySample` for empty input, `lengthMismatch` when the counts differ, `nonFiniteValue` for NaN
    ///   or infinite values.
    public static func correlation(
        _ x: [Double], _ y: [Double], alternative: Alternative = .twoSided
    ) throws(StatisticsError) -> Result {
        try Validation.requireFiniteNonEmpty(x, "first sample")
        try Validation.requireFiniteNonEmpty(y, "second sample")
        guard x.count == y.count else {
            throw StatisticsError(.lengthMismatch, "samples have different lengths (\(x.count) and \(y.count))")
        }
        let n = x.count
        guard n > 1, x.contains(where: { $0 != x[0] }), y.contains(where: { $0 != y[0] }) else {
            return Result(rho: .nan, pValue: .nan)
        }
        let rho = pearson(Descriptive.rankWithTies(x).ranks, Descriptive.rankWithTies(y).ranks)
        let freedom = Double(n - 2)
        guard n > 2 else { return Result(rho: rho, pValue: .nan) }
        let t = rho * max(0, freedom / ((rho + 1) * (1 - rho))).squareRoot()
        let pValue: Double
        switch alternative {
        case .greater: pValue = StudentT.uppertail(t: t, degreesOfFreedom: freedom)
        case .less: pValue = StudentT.uppertail(t: -t, degreesOfFreedom: freedom)
        case .twoSided: pValue = 2 * StudentT.uppertail(t: abs(t), degreesOfFreedom: freedom)
        }
        return Result(rho: rho, pValue: pValue)
    }

    /// Pearson correlation as NumPy's `corrcoef` evaluates it: covariances scaled by `1/(n − 1)`, the cross term
    /// divided by each standard deviation in turn, then clipped to [−1, 1].
    static func pearson(_ x: [Double], _ y: [Double]) -> Double {
        let meanX = Descriptive.meanOfValid(x)
        let meanY = Descriptive.meanOfValid(y)
        var sxx = CompensatedSum()
        var syy = CompensatedSum()
        var sxy = CompensatedSum()
        for index in x.indices {
            let dx = x[index] - meanX
            let dy = y[index] - meanY
            sxx.add(dx * dx)
            syy.add(dy * dy)
            sxy.add(dx * dy)
        }
        let scale = 1 / Double(x.count - 1)
        let deviationX = (sxx.total * scale).squareRoot()
        let deviationY = (syy.total * scale).squareRoot()
        let rho = sxy.total * scale / deviationX / deviationY
        return min(max(rho, -1), 1)
    }
}
