extension KolmogorovSmirnov {
    /// The exact two-sided p-value `P(D ≥ h/n)` for two samples of the same size `n`, in O(min(n, h + 7√n)) time
    /// and O(1) memory.
    ///
    /// With equal sizes the lattice path of `firstExitPValue` is a walk of 2n steps (+1 for a value of the first
    /// sample, −1 for one of the second) from 0 back to 0, and `D·n` is its largest distance from 0. A walk that
    /// reaches +h can be reflected after its first visit there, which maps the walks from 0 to 0 that reach +h
    /// one to one onto all walks from 0 to 2h: there are `C(2n, n − h)` of them. Walks that visit +h and then −h
    /// map, by two reflections, onto walks ending at 4h, and so on; inclusion-exclusion over the alternating
    /// visits of +h and −h gives
    ///
    ///     P(D ≥ h/n) = 2 · Σ_{k ≥ 1} (−1)^(k−1) · t_k,    t_k = C(2n, n − k·h) / C(2n, n),
    ///
    /// with `t_0 = 1` and `t_{k+1} = t_k · Π_{j<h} (n − k·h − j)/(n + k·h + j + 1)`. The ratios decrease with k,
    /// so the series alternates with decreasing terms: summing stops when a term vanishes (k·h > n) or falls below
    /// 2⁻⁶⁴ of the first, which bounds the truncation error by that term. Factors are multiplied exactly in
    /// integer blocks below 2⁵³ and applied with one division per block, so a term carries about `h/3` roundings;
    /// in the tail the first term dominates and the result keeps its relative accuracy (`2/C(200, 100)` for two
    /// separated samples of 100) until it underflows. Near p = 1 the error is absolute, a few ulps of 1.
    /// - Parameter h: `D·n`, an integer in 0…n.
    public static func equalSizePValue(_ n: Int, latticeDistance h: Int) -> Double {
        // Every walk leaves 0 at its first step, so D ≥ 1/n always holds.
        guard n > 0, h > 1 else { return 1 }
        guard h <= n else { return 0 }  // D > 1 cannot happen
        var sum = CompensatedSum()
        var term = 1.0
        var first = 0.0
        var k = 0
        var positive = true
        while (k + 1) * h <= n {
            let offset = k * h
            var numerator = 1.0
            var denominator = 1.0
            for j in 0..<h {
                let factorDenominator = Double(n + offset + j + 1)
                if denominator * factorDenominator > 0x1p53 {
                    term *= numerator / denominator
                    numerator = 1
                    denominator = 1
                }
                numerator *= Double(n - offset - j)
                denominator *= factorDenominator
            }
            term *= numerator / denominator
            if k == 0 { first = term }
            sum.add(positive ? term : -term)
            if term == 0 || term < first * 0x1p-64 { break }
            positive.toggle()
            k += 1
        }
        return min(max(2 * sum.total, 0), 1)
    }
}
