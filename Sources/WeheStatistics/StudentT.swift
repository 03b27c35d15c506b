import Foundation

/// Student's t distribution.
public enum StudentT {
    /// `P(T > t)` for Student's t with `degreesOfFreedom` (which need not be an integer).
    ///
    /// Computed as `½·I_z(ν/2, ½)` with `z = ν/(ν + t²)` through the regularized incomplete beta function, so the
    /// upper tail keeps its relative accuracy (about 1e-13) far below 1e-300. Returns NaN for NaN input or
    /// `degreesOfFreedom ≤ 0`; an infinite `degreesOfFreedom` gives the normal tail.
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
        let half =
            0.5
            * SpecialFunctions.regularizedIncompleteBeta(
                a: degreesOfFreedom / 2, b: 0.5, x: z, y: oneMinusZ,
                logX: 2 * log(ratio) - logOnePlus, logY: -logOnePlus)
        return t > 0 ? half : 1 - half
    }
}
