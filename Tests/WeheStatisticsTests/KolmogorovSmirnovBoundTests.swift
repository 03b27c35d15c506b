import Foundation
import Testing
import WeheStatistics

/// `Method.bounded(exactCells:)`: the exact p-value while `n1·n2` stays within the bound (or the sizes are equal),
/// the asymptotic one beyond, and the two agree near the bound.
///
/// Agreement measured with SciPy 1.17.1 (`ks_2samp`, exact against asymp, normal samples shifted 0 to 0.3, 300
/// seeds): at 1000 × 999 the largest |Δp| for exact p ≥ 1e-4 is 0.0090 (relative 6.4 % for p in [0.001, 0.1]); at
/// 1001 × 999, 0.0077; at 1400 × 1000, 0.0008. Asserted here: |Δp| ≤ 0.01 for exact p ≥ 1e-4, just past the bound.
@Suite struct KolmogorovSmirnovBoundTests {
    static let bound = KolmogorovSmirnov.analysisExactCells
    static let tolerance = 0.01

    /// `count` normal values with mean `shift` (Box-Muller on a seeded generator).
    static func normal(_ count: Int, shift: Double, seed: UInt64) -> [Double] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            let u = Double.random(in: Double.ulpOfOne..<1, using: &generator)
            let v = Double.random(in: 0..<1, using: &generator)
            return shift + (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
        }
    }

    @Test("real-size tests keep the exact p-value: the same result as SciPy's auto")
    func realSizesStayExact() throws {
        // A real test has about 560 samples (ours) or 100 (the published clients); the jackknife halves them.
        for (n1, n2) in [(560, 559), (280, 279), (100, 99), (99, 60), (1000, 999), (1000, 1000)] {
            let a = Self.normal(n1, shift: 0, seed: UInt64(n1))
            let b = Self.normal(n2, shift: 0.15, seed: UInt64(n2) + 7)
            let bounded = try KolmogorovSmirnov.twoSample(a, b, method: .bounded(exactCells: Self.bound))
            let auto = try KolmogorovSmirnov.twoSample(a, b, method: .auto)
            #expect(bounded.method == .exact, "\(n1) × \(n2)")
            #expect(bounded == auto, "\(n1) × \(n2)")
        }
    }

    @Test("beyond the bound unequal sizes get the asymptotic p-value; equal sizes stay exact (O(n))")
    func largeSizesGoAsymptotic() throws {
        let cases: [(Int, Int, KolmogorovSmirnov.Method)] = [
            (1001, 1000, .asymptotic), (5000, 4999, .asymptotic), (10_000, 9_999, .asymptotic),
            (5000, 5000, .exact), (10_000, 10_000, .exact), (10_001, 10_001, .asymptotic), (20_000, 100, .asymptotic),
        ]
        for (n1, n2, expected) in cases {
            let a = Self.normal(n1, shift: 0, seed: 1)
            let b = Self.normal(n2, shift: 0.05, seed: 2)
            let result = try KolmogorovSmirnov.twoSample(a, b, method: .bounded(exactCells: Self.bound))
            #expect(result.method == expected, "\(n1) × \(n2)")
            if expected == .asymptotic {
                #expect(result == (try KolmogorovSmirnov.twoSample(a, b, method: .asymptotic)), "\(n1) × \(n2)")
            }
        }
        // The product is checked without overflow.
        let tiny = try KolmogorovSmirnov.twoSample([1, 2, 3], [1.5, 2.5], method: .bounded(exactCells: 5))
        #expect(tiny.method == .asymptotic)
        let within = try KolmogorovSmirnov.twoSample([1, 2, 3], [1.5, 2.5], method: .bounded(exactCells: 6))
        #expect(within.method == .exact)
    }

    @Test("just past the bound the asymptotic p-value agrees with the exact one within 0.01")
    func agreementNearTheBound() throws {
        var worst = 0.0
        var compared = 0
        for (n1, n2) in [(1001, 1000), (1010, 999), (1100, 950)] {
            #expect(n1 * n2 > Self.bound)
            for step in 0..<8 {
                let shift = Double(step) * 0.025
                let a = Self.normal(n1, shift: 0, seed: UInt64(100 + step))
                let b = Self.normal(n2, shift: shift, seed: UInt64(200 + step))
                let bounded = try KolmogorovSmirnov.twoSample(a, b, method: .bounded(exactCells: Self.bound))
                let exact = try KolmogorovSmirnov.twoSample(a, b, method: .exact)
                #expect(bounded.method == .asymptotic && exact.method == .exact)
                guard exact.pValue >= 1e-4 else { continue }
                compared += 1
                let difference = abs(bounded.pValue - exact.pValue)
                worst = max(worst, difference)
                #expect(
                    difference <= Self.tolerance,
                    "\(n1) × \(n2), shift \(shift): exact \(exact.pValue), asymptotic \(bounded.pValue)")
            }
        }
        #expect(compared >= 12, "too few p-values above 1e-4 to compare: \(compared)")
        print("[ks-bound] \(compared) p-values compared past the bound, worst |exact - asymptotic| = \(worst)")
    }
}
