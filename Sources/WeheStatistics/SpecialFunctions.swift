import Foundation

/// Numerical building blocks shared by the tests of this target: Stirling corrections, binomial and hypergeometric
/// probabilities in log space, log-beta and the regularized incomplete beta function.
///
/// The log-probabilities use the saddle-point form of the binomial probability (Loader, "Fast and accurate
/// computation of binomial probabilities", 2000): the large `n·log n` parts of the three log-factorials cancel
/// analytically, so the result keeps a relative accuracy near `1e-15 · max(1, |log p|)` instead of the
/// `1e-16 · log(n!)` that a difference of `lgamma` values gives.
enum SpecialFunctions {
    /// `log(2π)`.
    static let logTwoPi = 1.837_877_066_409_345_5
    /// `log(√(2π))`.
    static let logSqrtTwoPi = 0.918_938_533_204_672_8

    /// `stirlingError(n)` for n = 0…15, computed with 40-digit arithmetic (value 0 for n = 0 by convention).
    private static let smallStirlingErrors: [Double] = [
        0,
        0.081_061_466_795_327_258,
        0.041_340_695_955_409_294,
        0.027_677_925_684_998_339,
        0.020_790_672_103_765_093,
        0.016_644_691_189_821_192,
        0.013_876_128_823_070_748,
        0.011_896_709_945_891_770,
        0.010_411_265_261_972_096,
        0.009_255_462_182_712_732_9,
        0.008_330_563_433_362_871_3,
        0.007_573_675_487_951_840_8,
        0.006_942_840_107_209_529_9,
        0.006_408_994_188_004_207_1,
        0.005_951_370_112_758_847_7,
        0.005_554_733_551_962_801_4,
    ]

    /// The remainder of Stirling's formula: `log Γ(x + 1) − ((x + ½)·log x − x + log √(2π))`, which also equals
    /// `log Γ(x) − ((x − ½)·log x − x + log √(2π))`.
    ///
    /// Exact table for integers up to 15, the asymptotic series (Bernoulli-number coefficients) from 16 on, and the
    /// defining formula for other small arguments.
    static func stirlingError(_ x: Double) -> Double {
        if x < 16 {
            if x >= 0, x == x.rounded(.down) {
                return smallStirlingErrors[Int(x)]
            }
            return lgamma(x + 1) - (x + 0.5) * log(x) + x - logSqrtTwoPi
        }
        // Coefficients B_2k / (2k (2k − 1)): 1/12, 1/360, 1/1260, 1/1680, 1/1188, 691/360360.
        let inverseSquare = 1 / (x * x)
        var series = 691.0 / 360_360.0
        series = 1.0 / 1188.0 - inverseSquare * series
        series = 1.0 / 1680.0 - inverseSquare * series
        series = 1.0 / 1260.0 - inverseSquare * series
        series = 1.0 / 360.0 - inverseSquare * series
        series = 1.0 / 12.0 - inverseSquare * series
        return series / x
    }

    /// The binomial deviance `x·log(x/mean) + mean − x`, computed without cancellation when `x` is near `mean`.
    static func binomialDeviance(_ x: Double, _ mean: Double) -> Double {
        let difference = x - mean
        let total = x + mean
        guard abs(difference) < 0.1 * total else {
            return x * log(x / mean) + mean - x
        }
        // x·log(x/M) + M − x = (x − M)·v + 2x·Σ_{j≥1} v^(2j+1)/(2j+1) with v = (x − M)/(x + M).
        let v = difference / total
        let vSquared = v * v
        var sum = difference * v
        var power = 2 * x * v
        var j = 1.0
        while true {
            power *= vSquared
            let next = sum + power / (2 * j + 1)
            if next == sum { return next }
            sum = next
            j += 1
        }
    }

    /// `log` of the binomial probability of `x` successes in `n` trials, given the expected successes
    /// `meanSuccesses = n·p` and expected failures `meanFailures = n·(1 − p)` (both passed so that neither is
    /// formed by a cancelling subtraction).
    static func logBinomialProbability(
        successes x: Int, trials n: Int, meanSuccesses: Double, meanFailures: Double
    ) -> Double {
        guard x >= 0, x <= n else { return -.infinity }
        let trials = Double(n)
        if x == 0 {
            if meanSuccesses <= 0 { return 0 }
            if meanFailures <= 0 { return -.infinity }
            return meanSuccesses < meanFailures
                ? trials * log1p(-meanSuccesses / trials) : trials * log(meanFailures / trials)
        }
        if x == n {
            if meanFailures <= 0 { return 0 }
            if meanSuccesses <= 0 { return -.infinity }
            return meanFailures < meanSuccesses
                ? trials * log1p(-meanFailures / trials) : trials * log(meanSuccesses / trials)
        }
        if meanSuccesses <= 0 || meanFailures <= 0 { return -.infinity }
        let successes = Double(x)
        let failures = Double(n - x)
        let stirling = stirlingError(trials) - stirlingError(successes) - stirlingError(failures)
        let deviance = binomialDeviance(successes, meanSuccesses) + binomialDeviance(failures, meanFailures)
        let normalisation = logTwoPi + log(successes) + log1p(-successes / trials)
        return stirling - deviance - 0.5 * normalisation
    }

    /// `log` of the hypergeometric probability `C(K, k)·C(N − K, n − k) / C(N, n)`: `k` marked items in a draw of
    /// `draws` items from `population` items of which `marked` are marked.
    ///
    /// Equivalently, the probability that a uniformly random monotone lattice path from (0, 0) to
    /// (marked, population − marked) passes through (k, draws − k).
    static func logHypergeometricProbability(
        _ k: Int, population: Int, marked: Int, draws: Int
    ) -> Double {
        let unmarked = population - marked
        let other = draws - k
        guard k >= 0, other >= 0, k <= marked, other <= unmarked else { return -.infinity }
        if draws == 0 || draws == population { return 0 }
        // The identity C(K,k)·C(N−K,n−k)/C(N,n) = b(k; K, p)·b(n−k; N−K, p) / b(n; N, p) holds for every p;
        // p = n/N centres all three binomials on the draw.
        let p = Double(draws) / Double(population)
        let q = Double(population - draws) / Double(population)
        let first = logBinomialProbability(
            successes: k, trials: marked,
            meanSuccesses: Double(marked) * p, meanFailures: Double(marked) * q)
        let second = logBinomialProbability(
            successes: other, trials: unmarked,
            meanSuccesses: Double(unmarked) * p, meanFailures: Double(unmarked) * q)
        let whole = logBinomialProbability(
            successes: draws, trials: population,
            meanSuccesses: Double(draws), meanFailures: Double(population - draws))
        return first + second - whole
    }

    /// `log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b)` for positive `a`, `b`, accurate to about 1e-15 in
    /// absolute terms even when one argument is large (the large `log Γ` values cancel analytically).
    static func logBeta(_ a: Double, _ b: Double) -> Double {
        let small = min(a, b)
        let large = max(a, b)
        if large < 16 {
            return lgamma(a) + lgamma(b) - lgamma(a + b)
        }
        let sum = a + b
        if small < 16 {
            // log Γ(L) − log Γ(L + s) = −(L − ½)·log1p(s/L) − s·log(L + s) + s + c(L) − c(L + s).
            let ratio = -(large - 0.5) * log1p(small / large) - small * log(sum) + small
            return lgamma(small) + ratio + stirlingError(large) - stirlingError(sum)
        }
        let main = -0.5 * log(sum) - (a - 0.5) * log1p(b / a) - (b - 0.5) * log1p(a / b)
        return logSqrtTwoPi + main + stirlingError(a) + stirlingError(b) - stirlingError(sum)
    }

    /// The regularized incomplete beta function `I_x(a, b)`.
    ///
    /// - Parameters:
    ///   - x: the integration limit in [0, 1].
    ///   - y: `1 − x`, supplied by the caller without cancellation.
    ///   - logX: `log x` (may be finite even when `x` underflows).
    ///   - logY: `log y`.
    static func regularizedIncompleteBeta(
        a: Double, b: Double, x: Double, y: Double, logX: Double, logY: Double
    ) -> Double {
        if x.isNaN || y.isNaN || a.isNaN || b.isNaN || a <= 0 || b <= 0 { return .nan }
        if logX == -.infinity { return 0 }
        if logY == -.infinity { return 1 }
        // The continued fraction converges fast below the mean of Beta(a, b); use the symmetry above it.
        if x > (a + 1) / (a + b + 2) {
            return 1 - incompleteBetaFraction(a: b, b: a, x: y, logX: logY, logY: logX)
        }
        return incompleteBetaFraction(a: a, b: b, x: x, logX: logX, logY: logY)
    }

    /// `I_x(a, b)` by its continued fraction (DLMF 8.17.22), evaluated with the modified Lentz method.
    private static func incompleteBetaFraction(
        a: Double, b: Double, x: Double, logX: Double, logY: Double
    ) -> Double {
        let logFront = a * logX + b * logY - logBeta(a, b) - log(a)
        if logFront < -745.2 { return 0 }
        let tiny = 1e-300
        var fraction = 1.0
        var c = 1.0
        var d = 0.0
        var step = 1
        while step < 2_000_000 {
            let m = Double(step / 2)
            let coefficient: Double
            if step % 2 == 1 {
                coefficient = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
            } else {
                coefficient = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
            }
            d = 1 + coefficient * d
            if abs(d) < tiny { d = tiny }
            c = 1 + coefficient / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = c * d
            fraction *= delta
            if abs(delta - 1) < 1e-16 { break }
            step += 1
        }
        return exp(logFront) / fraction
    }

    /// Greatest common divisor of two non-negative integers.
    static func gcd(_ a: Int, _ b: Int) -> Int {
        var x = a
        var y = b
        while y != 0 { (x, y) = (y, x % y) }
        return x
    }
}

/// A running sum with Neumaier's compensation: the error stays near one rounding whatever the number of terms.
struct CompensatedSum {
    private(set) var sum = 0.0
    private var compensation = 0.0

    /// Adds `value`.
    mutating func add(_ value: Double) {
        let next = sum + value
        if abs(sum) >= abs(value) {
            compensation += (sum - next) + value
        } else {
            compensation += (value - next) + sum
        }
        sum = next
    }

    /// The compensated total.
    var total: Double { sum + compensation }
}
