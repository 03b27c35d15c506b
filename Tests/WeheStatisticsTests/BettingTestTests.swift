import Foundation
import Testing
import WeheStatistics

/// The betting test of the adaptive verdict against `Golden/sequential.json` (`scripts/golden_sequential.py`: exact
/// rational wealth, interval bounds by Brent's method on floating-point products), and its basic properties.
@Suite struct BettingTestTests {
    struct Case: Decodable {
        var kind: String
        var name: String?
        var differences: [Double]?
        var shift: Double?
        var scale: Double?
        var side: String?
        var bets: Int
        var logWealthPath: [Double]?
        var alpha: Double?
        var lower: Double?
        var upper: Double?
        var level: Double?
        var rounds: Int?
    }

    static func side(_ name: String?) -> BettingTest.Side { name == "greater" ? .greater : .less }

    /// Every prefix's log wealth equals the exact value to 1e-12 (relative, absolute below 1); the incremental
    /// `Wealth` equals `logWealth` bit for bit.
    @Test func wealthMatchesExactArithmetic() throws {
        let cases = try Golden.cases("sequential", as: Case.self).filter { $0.kind == "wealth" }
        #expect(cases.count >= 10)
        var worst = 0.0
        var values = 0
        for golden in cases {
            let differences = try #require(golden.differences)
            let path = try #require(golden.logWealthPath)
            let bets = BettingTest.bets(count: golden.bets)
            let shift = try #require(golden.shift)
            let scale = try #require(golden.scale)
            var wealth = BettingTest.Wealth(shift: shift, scale: scale, side: Self.side(golden.side), bets: bets)
            for (index, expected) in path.enumerated() {
                let prefix = Array(differences[...index])
                let actual = try BettingTest.logWealth(
                    prefix, shift: shift, scale: scale, side: Self.side(golden.side), bets: bets)
                wealth.add(differences[index])
                #expect(wealth.logWealth == actual)
                let label = "\(golden.name ?? "?") \(golden.side ?? "?") K\(golden.bets) n\(index + 1)"
                // Relative error, absolute below 1 (log wealth crosses 0).
                let error = abs(actual - expected) / max(1, abs(expected))
                worst = max(worst, error)
                values += 1
                #expect(error <= 1e-12, "\(label): \(actual) against \(expected)")
            }
        }
        print("[golden] betting wealth: \(values) values, worst error \(worst) (relative, absolute below 1)")
    }

    /// The confidence sequence's bounds equal Brent's roots to 1e-9, and are infinite exactly where the reference's
    /// are.
    @Test func intervalMatchesBrentRoots() throws {
        let cases = try Golden.cases("sequential", as: Case.self).filter { $0.kind == "interval" }
        #expect(cases.count >= 15)
        var finite = 0
        for golden in cases {
            let differences = try #require(golden.differences)
            let interval = try BettingTest.confidenceInterval(
                differences, alpha: try #require(golden.alpha), scale: try #require(golden.scale),
                bets: BettingTest.bets(count: golden.bets))
            let lower = try #require(golden.lower)
            let upper = try #require(golden.upper)
            for (actual, expected, end) in [(interval.lower, lower, "lower"), (interval.upper, upper, "upper")] {
                if expected.isFinite {
                    finite += 1
                    #expect(abs(actual - expected) <= 1e-9, "\(golden.name ?? "?") \(end): \(actual) vs \(expected)")
                } else {
                    #expect(actual == expected, "\(golden.name ?? "?") \(end): \(actual) vs \(expected)")
                }
            }
        }
        #expect(finite >= 20)
    }

    @Test func fewestRoundsMatchExactCount() throws {
        let cases = try Golden.cases("sequential", as: Case.self).filter { $0.kind == "fewest" }
        #expect(cases.count == 5)
        for golden in cases {
            let level = try #require(golden.level)
            #expect(
                BettingTest.fewestRounds(level: level, bets: BettingTest.bets(count: golden.bets)) == golden.rounds)
        }
        // The adaptive verdict's level (alpha 0.01, each side at 0.005) with the default 50 bets.
        #expect(BettingTest.fewestRounds(level: 0.005) == 11)
    }

    /// Rising the shift lowers the "greater" wealth and raises the "less" one (what makes the interval an interval).
    @Test func wealthIsMonotoneInTheShift() throws {
        let differences = [0.05, -0.12, 0.3, 0.0, -0.02, 0.07, 0.11, -0.4]
        var previousGreater = Double.infinity
        var previousLess = -Double.infinity
        for step in 0...80 {
            let shift = -0.5 + Double(step) * 0.0125
            let greater = try BettingTest.logWealth(differences, shift: shift, scale: 0.1, side: .greater)
            let less = try BettingTest.logWealth(differences, shift: shift, scale: 0.1, side: .less)
            #expect(greater <= previousGreater)
            #expect(less >= previousLess)
            previousGreater = greater
            previousLess = less
        }
    }

    @Test func badInputIsAClearError() {
        #expect(throws: StatisticsError.self) { try BettingTest.logWealth([0.1, .nan], scale: 0.1, side: .less) }
        #expect(throws: StatisticsError.self) { try BettingTest.logWealth([0.1], scale: 0, side: .less) }
        #expect(throws: StatisticsError.self) { try BettingTest.logWealth([0.1], scale: 0.1, side: .less, bets: [1]) }
        #expect(throws: StatisticsError.self) { try BettingTest.confidenceInterval([0.1], alpha: 1, scale: 0.1) }
        #expect((try? BettingTest.logWealth([], scale: 0.1, side: .greater)) == 0)
    }

    /// The forecast keeps each constant bet's average growth: for rounds that repeat one value it is exactly the
    /// wealth after that many more such rounds; for alternating values every bet's product shrinks or stays, so the
    /// forecast never passes the wealth it has.
    @Test func projectionOfConstantBets() throws {
        var wealth = BettingTest.Wealth(shift: 0, scale: 0.1, side: .less)
        for _ in 0..<5 { wealth.add(-0.03) }
        #expect(wealth.count == 5)
        let projected = wealth.projectedLogWealth(afterMore: 7)
        let exact = try BettingTest.logWealth([Double](repeating: -0.03, count: 12), scale: 0.1, side: .less)
        #expect(abs(projected - exact) < 1e-12)
        #expect(wealth.projectedLogWealth(afterMore: 0) == wealth.logWealth)
        var mixed = BettingTest.Wealth(shift: 0, scale: 0.1, side: .less)
        for index in 0..<10 { mixed.add(index % 2 == 0 ? 0.5 : -0.5) }
        #expect(mixed.projectedLogWealth(afterMore: 100) <= mixed.logWealth)
        #expect(BettingTest.Wealth(shift: 0, scale: 0.1, side: .less).projectedLogWealth(afterMore: 3) == 0)
    }
}
