/// Input generators and tolerances shared by the tests (analysis.md section 8).
enum Vectors {
    /// `cyc(b, s, n, m)[k] = b + s·(((7k) mod m) − (m−1)/2)`, exact in binary floating point.
    static func cyc(_ base: Double, _ step: Double, n: Int = 100, m: Int = 10) -> [Double] {
        (0..<n).map { k in base + step * (Double((7 * k) % m) - Double(m - 1) / 2) }
    }

    /// `[value] × count`.
    static func rep(_ value: Double, _ count: Int) -> [Double] { Array(repeating: value, count: count) }

    /// Whether `actual` is within `relative` of `expected` (or within `absolute` for values near 0).
    static func close(_ actual: Double, _ expected: Double, relative: Double = 1e-4, absolute: Double = 1e-9) -> Bool {
        abs(actual - expected) <= max(absolute, relative * abs(expected))
    }
}
