import Foundation

/// The standard normal distribution.
///
/// Both tails come from `erfc`, so `survival(38)` ≈ 2.9e-316 keeps its relative accuracy instead of rounding to 0
/// as `1 − cdf(38)` would.
public enum NormalDistribution {
    /// `1/√2`.
    private static let inverseSquareRootTwo = 0.707_106_781_186_547_524_4

    /// `P(Z ≤ x)`; NaN for NaN.
    public static func cdf(_ x: Double) -> Double {
        0.5 * erfc(-x * inverseSquareRootTwo)
    }

    /// `P(Z > x)`, accurate in the upper tail; NaN for NaN.
    public static func survival(_ x: Double) -> Double {
        0.5 * erfc(x * inverseSquareRootTwo)
    }
}
