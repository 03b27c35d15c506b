import Testing
import WeheStatistics

/// Bad input throws a typed error instead of trapping, and degenerate but valid input gives defined results.
@Suite struct InputValidationTests {
    @Test func kolmogorovSmirnovRejectsBadInput() {
        #expect(throws: StatisticsError(.emptySample, "")) { try KolmogorovSmirnov.twoSample([], [1]) }
        #expect(throws: StatisticsError(.emptySample, "")) { try KolmogorovSmirnov.twoSample([1], []) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try KolmogorovSmirnov.twoSample([1, .nan], [1]) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try KolmogorovSmirnov.twoSample([1], [.infinity]) }
    }

    @Test func errorsNameTheProblem() {
        do {
            _ = try KolmogorovSmirnov.twoSample([1, 2, .nan], [1])
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .nonFiniteValue)
            #expect(error.message.contains("[2]"))
        }
    }

    @Test func kolmogorovSmirnovDegenerateSamples() throws {
        let same = try KolmogorovSmirnov.twoSample([3, 1, 2], [2, 3, 1])
        #expect(same.statistic == 0)
        #expect(same.pValue == 1)
        let single = try KolmogorovSmirnov.twoSample([1], [2])
        #expect(single.statistic == 1)
        #expect(single.pValue == 1)  // only two arrangements, both reach D = 1
        // SciPy's asymptotic formula needs round(n1·n2/(n1 + n2)) ≥ 1; for 1 vs 1 it is NaN there too.
        let asymptotic = try KolmogorovSmirnov.twoSample([1], [2], method: .asymptotic)
        #expect(asymptotic.pValue.isNaN)
        #expect(asymptotic.method == .asymptotic)
    }

    @Test func kolmogorovSmirnovMethodSelection() throws {
        let a = (0..<10_001).map { Double($0) }
        let b = (0..<300).map { Double($0) * 33.3 }
        #expect(try KolmogorovSmirnov.twoSample(a, b).method == .asymptotic)
        #expect(try KolmogorovSmirnov.twoSample(Array(a.prefix(10_000)), b).method == .exact)
        #expect(try KolmogorovSmirnov.twoSample(a, b, method: .exact).method == .exact)
        #expect(try KolmogorovSmirnov.twoSample([1, 2], [3], method: .asymptotic).method == .asymptotic)
    }

    @Test func mannWhitneyRejectsBadInputAndHandlesTies() throws {
        #expect(throws: StatisticsError(.emptySample, "")) { try MannWhitneyU.test([], [1], alternative: .less) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) {
            try MannWhitneyU.test([1], [-.infinity], alternative: .less)
        }
        let allEqual = try MannWhitneyU.test([4, 4, 4], [4, 4], alternative: .twoSided)
        #expect(allEqual.u1 == 3)
        #expect(allEqual.pValue == 1)
        let noCorrection = try MannWhitneyU.test(
            [4, 4, 4], [4, 4], alternative: .twoSided, method: .asymptotic, continuity: false)
        #expect(noCorrection.pValue.isNaN)
    }

    @Test func alternativesAreConsistent() throws {
        let x: [Double] = [1.2, 3.4, 2.2, 5.1, 0.3, 4.4, 2.9, 3.3, 1.1, 6.0]
        let y: [Double] = [2.5, 4.1, 5.9, 6.3, 3.8, 7.2, 5.5, 4.9, 6.6, 3.1, 5.0]
        let less = try MannWhitneyU.test(x, y, alternative: .less)
        let greater = try MannWhitneyU.test(x, y, alternative: .greater)
        let both = try MannWhitneyU.test(x, y, alternative: .twoSided)
        #expect(less.pValue < 0.05)
        #expect(greater.pValue > 0.95)
        #expect(abs(both.pValue - 2 * min(less.pValue, greater.pValue)) < 1e-15)
        let swapped = try MannWhitneyU.test(y, x, alternative: .greater)
        #expect(swapped.u1 == Double(x.count * y.count) - less.u1)
        #expect(abs(swapped.pValue - less.pValue) < 1e-15)
    }
}
