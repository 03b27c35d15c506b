import Foundation
import Testing
import WeheStatistics

/// Golden comparisons with SciPy 1.17.1 `spearmanr`.
///
/// Measured worst relative errors: ρ 2.2e-16; p 4.6e-15 (p ≥ 1e-15) and 9.0e-14 (smaller p). Asserted: ρ 1e-13,
/// p 1e-12.
@Suite struct SpearmanGoldenTests {
    struct Case: Decodable, Sendable {
        var id: String
        var x: SampleSpec
        var y: SampleSpec
        var alternative: String
        var rho: Double
        var pValue: Double
    }

    @Test func matchesSciPy() throws {
        let cases = try Golden.cases("spearman", as: Case.self)
        #expect(cases.count > 100)
        var rhoTracker = ErrorTracker("Spearman rho")
        var moderate = ErrorTracker("Spearman p >= 1e-15")
        var tiny = ErrorTracker("Spearman p < 1e-15")
        for item in cases {
            let x = try item.x.materialize()
            let y = try item.y.materialize()
            #expect(item.x.verifyReplay(x) && item.y.verifyReplay(y), "replay of \(item.id)")
            let label = "\(item.id) \(item.alternative)"
            let alternative: Alternative =
                switch item.alternative {
                case "less": .less
                case "greater": .greater
                default: .twoSided
                }
            let result = try Spearman.correlation(x, y, alternative: alternative)
            let rhoError = rhoTracker.record(result.rho, item.rho, label)
            #expect(rhoError <= 1e-13, "rho of \(label): \(result.rho) vs \(item.rho)")
            if item.pValue.isNaN || item.pValue == 0 {
                #expect(
                    result.pValue.isNaN == item.pValue.isNaN && (item.pValue.isNaN || result.pValue == 0),
                    "p of \(label): \(result.pValue) vs \(item.pValue)")
                continue
            }
            let error =
                item.pValue >= 1e-15
                ? moderate.record(result.pValue, item.pValue, label) : tiny.record(result.pValue, item.pValue, label)
            #expect(error <= 1e-12, "p of \(label): \(result.pValue) vs \(item.pValue)")
        }
        for tracker in [rhoTracker, moderate, tiny] { print(tracker.summary) }
    }

    @Test func rejectsBadInput() {
        #expect(throws: StatisticsError(.lengthMismatch, "")) { try Spearman.correlation([1, 2, 3], [1, 2]) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Spearman.correlation([], []) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try Spearman.correlation([1, .nan, 3], [1, 2, 3]) }
    }

    @Test func constantInputGivesNaNWithoutTrapping() throws {
        let result = try Spearman.correlation([1, 2, 3, 4], [7, 7, 7, 7], alternative: .greater)
        #expect(result.rho.isNaN)
        #expect(result.pValue.isNaN)
    }
}
