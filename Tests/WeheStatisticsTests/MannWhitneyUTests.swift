import Foundation
import Testing
import WeheStatistics

/// Golden comparisons with SciPy 1.17.1 `mannwhitneyu`, plus properties of the exact null distribution.
///
/// Measured worst relative p-value errors: exact 1.3e-14; asymptotic 8.6e-16 (p ≥ 1e-15) and 2.2e-15 (smaller p,
/// down to 1e-160). U1 matches exactly. Asserted: 1e-12.
@Suite struct MannWhitneyUGoldenTests {
    struct Case: Decodable, Sendable {
        var id: String
        var x: SampleSpec
        var y: SampleSpec
        var alternative: String
        var method: String
        var continuity: Bool
        var u1: Double
        var pValue: Double
    }

    static func alternative(_ name: String) -> Alternative {
        switch name {
        case "less": .less
        case "greater": .greater
        default: .twoSided
        }
    }

    static func method(_ name: String) -> MannWhitneyU.Method {
        switch name {
        case "exact": .exact
        case "asymptotic": .asymptotic
        default: .auto
        }
    }

    @Test func matchesSciPy() throws {
        let cases = try Golden.cases("mannwhitney", as: Case.self)
        #expect(cases.count > 80)
        var exact = ErrorTracker("MWU exact p")
        var moderate = ErrorTracker("MWU asymptotic p >= 1e-15")
        var tiny = ErrorTracker("MWU asymptotic p < 1e-15")
        for item in cases {
            let x = try item.x.materialize()
            let y = try item.y.materialize()
            #expect(item.x.verifyReplay(x) && item.y.verifyReplay(y), "replay of \(item.id)")
            let label = "\(item.id) \(item.alternative)"
            let result = try MannWhitneyU.test(
                x, y, alternative: Self.alternative(item.alternative), method: Self.method(item.method),
                continuity: item.continuity)
            #expect(result.u1 == item.u1, "U1 of \(label): \(result.u1) vs \(item.u1)")
            if item.pValue.isNaN {
                #expect(result.pValue.isNaN, "p of \(label) should be NaN, got \(result.pValue)")
                continue
            }
            let error: Double
            if result.method == .exact {
                error = exact.record(result.pValue, item.pValue, label)
            } else if item.pValue >= 1e-15 {
                error = moderate.record(result.pValue, item.pValue, label)
            } else {
                error = tiny.record(result.pValue, item.pValue, label)
            }
            #expect(error <= 1e-12, "p of \(label): \(result.pValue) vs \(item.pValue)")
        }
        for tracker in [exact, moderate, tiny] { print(tracker.summary) }
    }

    @Test func autoPicksExactOnlyForSmallSamplesWithoutTies() throws {
        let small = try MannWhitneyU.test([1, 2, 3], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13], alternative: .twoSided)
        #expect(small.method == .exact)
        let tied = try MannWhitneyU.test([1, 2, 2], [4, 5, 6], alternative: .twoSided)
        #expect(tied.method == .asymptotic)
        let nine = (0..<9).map(Double.init)
        let large = try MannWhitneyU.test(nine, nine.map { $0 + 0.5 }, alternative: .twoSided)
        #expect(large.method == .asymptotic)
    }

    @Test(arguments: [(3, 4), (5, 5), (1, 7), (6, 9)])
    func exactDistributionIsSymmetricAndSumsToOne(n1: Int, n2: Int) {
        // P(U ≥ u) + P(U ≥ n1·n2 − u + 1) = 1 by the symmetry of U about n1·n2/2.
        for u in 0...(n1 * n2 + 1) {
            let upper = MannWhitneyU.exactUpperTail(u, n1, n2)
            let mirrored = MannWhitneyU.exactUpperTail(n1 * n2 - u + 1, n1, n2)
            #expect(abs(upper + mirrored - 1) < 1e-14, "u = \(u)")
        }
        // The smallest tail is a single arrangement out of C(n1 + n2, n1).
        var arrangements = 1.0
        for k in 1...n1 { arrangements = arrangements * Double(n2 + k) / Double(k) }
        #expect(abs(MannWhitneyU.exactUpperTail(n1 * n2, n1, n2) * arrangements - 1) < 1e-13)
    }
}
