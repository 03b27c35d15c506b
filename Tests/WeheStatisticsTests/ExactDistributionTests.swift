import Foundation
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

    @Test(arguments: [(3, 4), (5, 5), (2, 9), (6, 7), (4, 8), (1, 6), (1, 1), (2, 2), (4, 4), (7, 7), (8, 8)])
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

    /// The O(n) reflection sum used for equal sizes against the general first-exit lattice sum, over every
    /// distance for small n and a spread of distances (p from 1 down to 1e-300 and below) for larger n.
    @Test(arguments: [1, 2, 3, 4, 10, 37, 100, 333, 1000])
    func equalSizeReflectionMatchesFirstExit(n: Int) {
        let distances = n <= 100 ? Array(0...(n + 1)) : Array(stride(from: 0, through: n, by: n / 40)) + [n - 1, n]
        var worst = 0.0
        for h in distances {
            let reflection = KolmogorovSmirnov.equalSizePValue(n, latticeDistance: h)
            let firstExit = KolmogorovSmirnov.firstExitPValue(n, n, latticeDistance: h)
            #expect(KolmogorovSmirnov.exactPValue(n, n, latticeDistance: h) == reflection)
            if firstExit < 1e-300 {
                #expect(reflection < 1e-300, "n = \(n), h = \(h): \(reflection) vs \(firstExit)")
                continue
            }
            let error = abs(reflection - firstExit) / firstExit
            worst = max(worst, error)
            #expect(error <= 1e-13, "n = \(n), h = \(h): \(reflection) vs \(firstExit)")
        }
        print("[exact] n = \(n): reflection vs first exit, worst relative difference \(worst)")
    }

    /// Two separated samples of n: only the two walks that never turn back reach distance n, p = 2/C(2n, n).
    @Test func equalSizeCompleteSeparation() {
        for n in [1, 2, 5, 30, 100, 250] {
            // C(2n, n) as a product of n exact ratios (2n − i)/(n − i), accumulated in log space.
            var logBinomial = 0.0
            for i in 0..<n { logBinomial += log(Double(2 * n - i) / Double(n - i)) }
            let expected = 2 * exp(-logBinomial)
            let value = KolmogorovSmirnov.equalSizePValue(n, latticeDistance: n)
            #expect(abs(value - expected) <= 1e-12 * expected, "n = \(n): \(value) vs \(expected)")
        }
        // 2/C(200, 100) to 16 digits (exact rational rounded once).
        let separated100 = KolmogorovSmirnov.exactPValue(100, 100, latticeDistance: 100)
        #expect(abs(separated100 - 2.2087606931995028e-59) <= 2e-15 * 2.2087606931995028e-59)
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
