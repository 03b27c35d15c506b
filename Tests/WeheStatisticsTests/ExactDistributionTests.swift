import Testing
import WeheStatistics

/// The exact KS and Mann-Whitney null distributions against brute-force enumeration of every arrangement of the
/// pooled sample, independent of SciPy.
@Suite struct ExactDistributionTests {
    /// Every way to choose which `n1` of the `n1 + n2` pooled ranks belong to the first sample.
    static func arrangements(_ n1: Int, _ n2: Int) -> [[Bool]] {
        var result: [[Bool]] = []
        func extend(_ prefix: [Bool], _ left1: Int, _ left2: Int) {
            if left1 == 0 && left2 == 0 {
                result.append(prefix)
                return
            }
            if left1 > 0 { extend(prefix + [true], left1 - 1, left2) }
            if left2 > 0 { extend(prefix + [false], left1, left2 - 1) }
        }
        extend([], n1, n2)
        return result
    }

    @Test(arguments: [(3, 4), (5, 5), (2, 9), (6, 7), (4, 8), (1, 6)])
    func kolmogorovSmirnovMatchesEnumeration(n1: Int, n2: Int) throws {
        let all = Self.arrangements(n1, n2)
        // Lattice distance h = max |i·n2 − j·n1| / g along each arrangement.
        let g = gcd(n1, n2)
        let distances = all.map { arrangement in
            var i = 0
            var j = 0
            var largest = 0
            for isFirst in arrangement {
                if isFirst { i += 1 } else { j += 1 }
                largest = max(largest, abs(i * n2 - j * n1) / g)
            }
            return largest
        }
        for h in Set(distances).sorted() {
            let count = distances.filter { $0 >= h }.count
            let expected = Double(count) / Double(all.count)
            let value = KolmogorovSmirnov.exactPValue(n1, n2, latticeDistance: h)
            #expect(abs(value - expected) <= 1e-14 * expected, "h = \(h): \(value) vs \(expected)")
            #expect(KolmogorovSmirnov.exactPValue(n2, n1, latticeDistance: h) == value)
        }
    }

    @Test(arguments: [(3, 4), (5, 5), (2, 9), (6, 7), (1, 6)])
    func mannWhitneyMatchesEnumeration(n1: Int, n2: Int) {
        let all = Self.arrangements(n1, n2)
        // U of the first sample = number of (first, second) pairs with the first value above the second.
        let statistics = all.map { arrangement in
            var seenSecond = 0
            var u = 0
            for isFirst in arrangement {
                if isFirst { u += seenSecond } else { seenSecond += 1 }
            }
            return u
        }
        for u in 0...(n1 * n2) {
            let expected = Double(statistics.filter { $0 >= u }.count) / Double(all.count)
            let value = MannWhitneyU.exactUpperTail(u, n1, n2)
            #expect(abs(value - expected) <= 1e-14, "u = \(u): \(value) vs \(expected)")
        }
    }

    private func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
}
