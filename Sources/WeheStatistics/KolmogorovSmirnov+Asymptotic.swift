import Foundation

extension KolmogorovSmirnov {
    /// `P(D_n ≥ d)` for the two-sided one-sample statistic `D_n = sup |F_n − F|` (SciPy `kstwo.sf(d, n)`).
    ///
    /// The algorithm choice follows Simard and L'Ecuyer (2011) with SciPy's thresholds: closed forms near both
    /// ends, twice the one-sided tail (`smirnovSurvival`) for large `n·d²`, the Durbin matrix method of Marsaglia,
    /// Tsang and Wang for small `n·d^1.5` (and for every `n·d² ≤ 4` when n ≤ 140, where SciPy uses the equally exact
    /// Pomeranz recursion), and the Pelz-Good expansion otherwise.
    public static func kolmogorovSurvival(_ d: Double, sampleSize n: Int) -> Double {
        guard n >= 1, !d.isNaN else { return .nan }
        let size = Double(n)
        if d <= 0.5 / size { return 1 }
        if d >= 1 { return 0 }
        let t = size * d
        if t <= 1 {
            // Ruben and Gambino: P(D_n ≤ d) = n!/n^n · (2t − 1)^n for 1/(2n) ≤ d ≤ 1/n.
            let logFactorialOverPower =
                0.5 * log(size) - size + SpecialFunctions.logSqrtTwoPi
                + SpecialFunctions.stirlingError(size)
            return clamp(1 - exp(logFactorialOverPower + size * log(2 * t - 1)))
        }
        if t >= size - 1 { return clamp(2 * pow(1 - d, size)) }
        if d >= 0.5 { return clamp(2 * smirnovSurvival(d, sampleSize: n)) }
        let nDSquared = t * d
        if n <= 140 {
            if nDSquared <= 4 { return clamp(1 - durbinMatrixCDF(d, sampleSize: n)) }
            return clamp(2 * smirnovSurvival(d, sampleSize: n))
        }
        if nDSquared >= 370 { return 0 }
        if nDSquared >= 2.2 { return clamp(2 * smirnovSurvival(d, sampleSize: n)) }
        let cdf =
            (n <= 100_000 && size * pow(d, 1.5) <= 1.4)
            ? durbinMatrixCDF(d, sampleSize: n) : pelzGoodCDF(d, sampleSize: n)
        return clamp(1 - cdf)
    }

    /// `P(D⁺_n ≥ d)` for the one-sided one-sample statistic `D⁺_n = sup (F_n − F)` (SciPy `smirnov(n, d)`).
    ///
    /// Exact Birnbaum-Tingey sum `d·Σ_{j ≤ n(1−d)} C(n, j)·(1 − d − j/n)^(n−j)·(d + j/n)^(j−1)` for n ≤ 10⁶, each
    /// term a binomial probability evaluated in log space; SciPy's approximation `exp(−(6nd + 1)²/(18n))` above.
    public static func smirnovSurvival(_ d: Double, sampleSize n: Int) -> Double {
        guard n >= 1, !d.isNaN else { return .nan }
        if d >= 1 { return 0 }
        if d <= 0 { return 1 }
        let size = Double(n)
        if n == 1 { return 1 - d }
        if -2 * size * d * d < -708.396_418_532_264_1 { return 0 }
        if d >= 1 - 1 / size { return pow(1 - d, size) }
        if n > 1_000_000 {
            let root = 6 * size * d + 1
            return exp(-root * root / (18 * size))
        }
        let nd = size * d
        let lastTerm = min(n - 1, max(0, Int((size - nd).rounded(.down))))
        var sum = CompensatedSum()
        for j in 0...lastTerm {
            let meanSuccesses = nd + Double(j)
            let meanFailures = Double(n - j) - nd
            guard meanFailures > 0 else { break }
            let logTerm = SpecialFunctions.logBinomialProbability(
                successes: j, trials: n, meanSuccesses: meanSuccesses, meanFailures: meanFailures)
            sum.add(exp(logTerm) * nd / meanSuccesses)
        }
        return clamp(sum.total)
    }

    /// `P(D_n < d)` by the Durbin matrix method (Marsaglia, Tsang and Wang 2003): with `k = ⌈n·d⌉`,
    /// `h = k − n·d` and an m×m matrix H (m = 2k − 1), the probability is `n!/n^n · (H^n)[k, k]`.
    /// Powers of two keep the entries in range; they are tracked separately and applied exactly at the end.
    static func durbinMatrixCDF(_ d: Double, sampleSize n: Int) -> Double {
        if d >= 1 { return 1 }
        let size = Double(n)
        let nd = size * d
        if nd <= 0.5 { return 0 }
        let k = Int(nd.rounded(.up))
        let h = Double(k) - nd
        let m = 2 * k - 1
        var inverseFactorials = [Double](repeating: 1, count: m + 1)
        for j in stride(from: 1, through: m, by: 1) { inverseFactorials[j] = inverseFactorials[j - 1] / Double(j) }
        var matrix = SquareMatrix(size: m)
        for i in 0..<m {
            for j in 0..<m where i - j + 1 >= 0 {
                matrix[i, j] = inverseFactorials[i - j + 1]
            }
        }
        for i in 0..<m {
            matrix[i, 0] = (1 - pow(h, Double(i + 1))) * inverseFactorials[i + 1]
            matrix[m - 1, i] = (1 - pow(h, Double(m - i))) * inverseFactorials[m - i]
        }
        let corner = 1 - 2 * pow(h, Double(m)) + pow(max(0, 2 * h - 1), Double(m))
        matrix[m - 1, 0] = corner * inverseFactorials[m]

        var power = SquareMatrix.identity(size: m)
        var powerExponent = 0
        var base = matrix
        var baseExponent = 0
        var remaining = n
        let limit = 0x1p128
        while remaining > 0 {
            if remaining & 1 == 1 {
                power = power.multiplied(by: base)
                powerExponent += baseExponent
                if power.largestMagnitude > limit {
                    power.scale(by: 0x1p-128)
                    powerExponent += 128
                }
            }
            remaining >>= 1
            if remaining > 0 {
                base = base.multiplied(by: base)
                baseExponent *= 2
                if base.largestMagnitude > limit {
                    base.scale(by: 0x1p-128)
                    baseExponent += 128
                }
            }
        }
        var probability = power[k - 1, k - 1]
        for i in 1...n {
            probability = probability * Double(i) / size
            if probability != 0, abs(probability) < 0x1p-128 {
                probability *= 0x1p128
                powerExponent -= 128
            }
        }
        return clamp(scalbn(probability, powerExponent))
    }

    /// `P(D_n ≤ d)` by the Pelz-Good (1976) expansion `K0(z) + K1(z)/√n + K2(z)/n + K3(z)/n^1.5`, z = d·√n,
    /// written with theta-function series that converge for small z; the first `⌈16z/π⌉` terms of each series.
    static func pelzGoodCDF(_ d: Double, sampleSize n: Int) -> Double {
        if d <= 0 { return 0 }
        if d >= 1 { return 1 }
        let size = Double(n)
        let z = size.squareRoot() * d
        let z2 = z * z
        let z4 = z2 * z2
        let z6 = z4 * z2
        let z8 = z4 * z4
        let pi2 = Double.pi * Double.pi
        let pi4 = pi2 * pi2
        let pi6 = pi4 * pi2
        let logQ = -pi2 / (8 * z2)
        if logQ < -708 { return 0 }
        let terms = Int((16 * z / Double.pi).rounded(.up))
        // Sums over odd m = 2k − 1 of exp(−π² m²/(8z²)) times polynomials in m².
        var k0 = 0.0
        var k1 = 0.0
        var k2 = 0.0
        var k3 = 0.0
        // Sums over all k of exp(−π² k²/(2z²)).
        var k2Extra = 0.0
        var k3Extra = 0.0
        for k in stride(from: terms, through: 1, by: -1) {
            let m = Double(2 * k - 1)
            let m2 = m * m
            let m4 = m2 * m2
            let m6 = m4 * m2
            let weight = exp(logQ * m2)
            k0 += weight
            k1 += weight * (-z2 + pi2 * m2 / 4)
            k2 += weight * (6 * z6 + 2 * z4 + (2 * z4 - 5 * z2) * pi2 / 4 * m2 + pi4 * (1 - 2 * z2) / 16 * m4)
            k3 +=
                weight
                * (-30 * z6 - 90 * z8 + pi2 * (135 * z4 - 96 * z6) / 4 * m2 + pi4 * (-60 * z2 + 212 * z4) / 16 * m4
                    + pi6 * (5 - 30 * z2) / 64 * m6)
            let kk = Double(k) * Double(k)
            let evenWeight = exp(-pi2 * kk / (2 * z2))
            k2Extra += kk * evenWeight
            k3Extra += (3 * z2 - pi2 * kk) * kk * evenWeight
        }
        let sqrtTwoPi = (2 * Double.pi).squareRoot()
        let zeroth = sqrtTwoPi * k0 / z
        let first = sqrtTwoPi * k1 / (6 * z4)
        let second = sqrtTwoPi * k2 / (72 * z6 * z) - pi2 * sqrtTwoPi / (36 * z2 * z) * k2Extra
        let third = sqrtTwoPi * k3 / (6480 * z8 * z2) + pi2 * sqrtTwoPi / (216 * z6) * k3Extra
        let root = size.squareRoot()
        return zeroth + first / root + second / size + third / (size * root)
    }

    private static func clamp(_ p: Double) -> Double {
        p.isNaN ? p : min(max(p, 0), 1)
    }
}
