import Foundation
import Testing
import WeheStatistics

/// The area statistics against exact rational integrals (Python `fractions`) and the vectors of analysis.md §8.1.
@Suite struct AreaTests {
    struct Case: Decodable, Sendable {
        var id: String
        var original: SampleSpec
        var control: SampleSpec
        var current: Double
        var legacy: Double
    }

    @Test func matchesExactReferences() throws {
        let cases = try Golden.cases("area", as: Case.self)
        var current = ErrorTracker("area current")
        var legacy = ErrorTracker("area legacy (exact integral)")
        for item in cases {
            let original = try item.original.materialize()
            let control = try item.control.materialize()
            #expect(item.original.verifyReplay(original) && item.control.verifyReplay(control))
            let now = try Area.current(original: original, control: control)
            let old = try Area.legacy(original: original, control: control)
            #expect(current.record(now, item.current, item.id) <= 1e-14, "current area of \(item.id)")
            #expect(legacy.record(old, item.legacy, item.id) <= 1e-13, "legacy area of \(item.id)")
        }
        print(current.summary)
        print(legacy.summary)
    }

    @Test func rejectsDegenerateInput() {
        #expect(throws: StatisticsError(.emptySample, "")) { try Area.current(original: [], control: [1]) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try Area.current(original: [0, 0], control: [0]) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try Area.current(original: [.nan], control: [1]) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Area.legacy(original: [0, 0], control: [1, 2]) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Area.legacy(original: [1], control: [0]) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try Area.legacy(original: [1], control: [.infinity]) }
    }

    @Test func signAndBounds() throws {
        // Control faster → positive; a prioritized original → negative; both within [−1, 1].
        #expect(try Area.current(original: [1, 1], control: [4, 4]) == 0.75)
        #expect(try Area.current(original: [4, 4], control: [1, 1]) == -0.75)
        #expect(try Area.current(original: [3, 0], control: [3]) == 0.5)
        // Legacy: a single value per list is the line (0, 0)–(1, x); ∫_{0.001}^{1} x·p dp = x·(1 − 1e-6)/2.
        let legacy = try Area.legacy(original: [2], control: [6])
        #expect(abs(legacy - (6 - 2) * (1 - 1e-6) / 2 / 2) < 1e-15)
    }
}
