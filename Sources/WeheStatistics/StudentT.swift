import Foundation

/// Student's t distribution.
public enum StudentT {
    /// `P(T > t)` for Student's t with `degreesOfFreedom` (which need not be an integer).
    ///
    /// Computed as `½·I_z(ν/2, ½)` with `z = ν/(ν + t²)` through the continued fraction of the regularized
    /// incomplete beta function, so the upper tail keeps its relative accuracy far below 1e-300. When
    /// `t²/(ν + t²) < 1e-3` (only reachable for large ν) that fraction loses digits to cancellation, and the tail is
    /// integrated instead: `∫_t^∞` of the density by double-exponential (exp-sinh) quadrature. Returns NaN for NaN
    /// input or `degreesOfFreedom ≤ 0`; an infinite `degreesOfFreedom` gives the normal tail.
    public static func uppertail(t: Double, degreesOfFreedom: Double) -> Double {
        if t.isNaN || degreesOfFreedom.isNaN || degreesOfFreedom <= 0 { return .nan }
        if t == .infinity { return 0 }
        if t == -.infinity { return 1 }
        if t == 0 { return 0.5 }
        if degreesOfFreedom == .infinity { return NormalDistribution.survival(t) }
        // r = √ν/|t| keeps z = r²/(1 + r²) and 1 − z = 1/(1 + r²) free of overflow for huge |t|.
        let ratio = degreesOfFreedom.squareRoot() / abs(t)
        if ratio > 1e150 { return 0.5 }
        let ratioSquared = ratio * ratio
        let logOnePlus = log1p(ratioSquared)
        let z = ratioSquared / (1 + ratioSquared)
        let oneMinusZ = 1 / (1 + ratioSquared)
        let half: Double
        if oneMinusZ < 1e-3 {
            half = integratedTail(abs(t), degreesOfFreedom)
        } else {
            // log z = −log1p(1/r²): the form 2·log r − log1p(r²) cancels badly when r is large.
            let logZ = ratioSquared > 1 ? -log1p(1 / ratioSquared) : 2 * log(ratio) - logOnePlus
            half =
                0.5
                * SpecialFunctions.regularizedIncompleteBeta(
                    a: degreesOfFreedom / 2, b: 0.5, x: z, y: oneMinusZ, logX: logZ, logY: -logOnePlus)
        }
        return t > 0 ? half : 1 - half
    }

    /// `P(T > t)` for t > 0 as `g(t)·∫_0^∞ exp(−φ(v)) dv`, where g is the density and
    /// `φ(v) = (ν + 1)/2 · log1p(v(2t + v)/(ν + t²))`, integrated with the substitution `v = exp(π/2·sinh τ)` and the
    /// trapezoidal rule, halving the step until two estimates agree to 1e-15.
    static func integratedTail(_ t: Double, _ nu: Double) -> Double {
        let exponent = (nu + 1) / 2
        let logDensity = -SpecialFunctions.logBeta(nu / 2, 0.5) - 0.5 * log(nu) - exponent * log1p(t * t / nu)
        let spread = nu + t * t
        let halfPi = Double.pi / 2
        func term(_ tau: Double) -> Double {
            let v = exp(halfPi * sinh(tau))
            guard v.isFinite else { return 0 }
            return exp(-exponent * log1p(v * (2 * t + v) / spread)) * halfPi * cosh(tau) * v
        }
        // Node range at the coarsest step: stop where terms no longer matter.
        var step = 0.5
        var sum = term(0)
        var highest = 0
        while highest < 200 {
            highest += 1
            let value = term(Double(highest) * step)
            sum += value
            if Double(highest) * step > 1, value < 1e-18 * sum { break }
        }
        var lowest = 0
        while lowest > -200 {
            lowest -= 1
            let value = term(Double(lowest) * step)
            sum += value
            if Double(lowest) * step < -1, value < 1e-18 * sum { break }
        }
        var estimate = sum * step
        let (lowerEnd, upperEnd) = (Double(lowest) * step, Double(highest) * step)
        for _ in 0..<12 {
            step /= 2
            var tau = lowerEnd + step
            while tau < upperEnd {
                sum += term(tau)
                tau += 2 * step
            }
            let refined = sum * step
            let converged = abs(refined - estimate) <= 1e-15 * refined
            estimate = refined
            if converged { break }
        }
        return exp(logDensity) * estimate
    }
}
