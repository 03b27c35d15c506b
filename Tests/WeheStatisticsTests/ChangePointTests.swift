import Foundation
import Testing
import WeheStatistics

/// Golden comparisons of the change-point pieces with `scripts/golden_statistics.py`, which
/// simulates rounds of replays (first 3 MB at half rate, 30 % off after 3 MB, unthrottled, a constant 70 % cap, …)
/// and recomputes the byte grid, the split and the exact p-value independently (numpy means per split, every sign
/// vector as one matrix product, and a brute-force loop for eight rounds or fewer). The p-values are counts over
/// 2^R, so they must match exactly; the split exactly; the other numbers to 1e-9 relative.
@Suite struct ChangePointGoldenTests {
    struct Series: Decodable, Sendable {
        var mbps: [Double]
        var times: [Double]
    }

    struct Round: Decodable, Sendable {
        var original: Series
        var control: Series
    }

    struct Part: Decodable, Sendable {
        var slowdown: Double
        var originalSeconds: Double
        var pValue: Double
    }

    struct Case: Decodable, Sendable {
        var id: String
        var rounds: [Round]
        var bins: Int
        var minimumSegment: Int
        var split: Int
        var statistic: Double
        var pValue: Double
        var contrast: Double
        var totalMegabytes: Double
        var changeMegabytes: Double
        var changeSeconds: Double
        var before: Part
        var after: Part
        var kind: String
        var found: Bool
    }

    static func close(_ got: Double, _ want: Double, _ relative: Double = 1e-9) -> Bool {
        got == want || abs(got - want) <= relative * max(1e-12, abs(want))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    @Test func matchesReference() throws {
        let cases = try Golden.cases("changepoint", as: Case.self)
        #expect(cases.count >= 7)
        for item in cases {
            let totals = item.rounds.flatMap { [$0.original, $0.control] }.map {
                ChangePointTest.cumulativeMegabytes(mbps: $0.mbps, times: $0.times).last ?? 0
            }
            let total = try #require(totals.min())
            #expect(total == item.totalMegabytes, "total of \(item.id)")
            let fewest = try #require(item.rounds.map { min($0.original.mbps.count, $0.control.mbps.count) }.min())
            let bins = min(50, fewest)
            #expect(bins == item.bins, "bins of \(item.id)")
            let segment = ChangePointTest.minimumSegment(bins: bins)
            #expect(segment == item.minimumSegment, "segment of \(item.id)")
            var originalDurations: [[Double]] = []
            var ratios: [[Double]] = []
            for round in item.rounds {
                let original = try #require(
                    ChangePointTest.binDurations(
                        mbps: round.original.mbps, times: round.original.times, megabytes: total, bins: bins))
                let control = try #require(
                    ChangePointTest.binDurations(
                        mbps: round.control.mbps, times: round.control.times, megabytes: total, bins: bins))
                originalDurations.append(original)
                ratios.append(zip(control, original).map { log($0 / $1) })
            }
            let result = try ChangePointTest.test(ratios, minimumSegment: segment)
            #expect(result.split == item.split, "split of \(item.id): \(result.split) vs \(item.split)")
            #expect(result.pValue == item.pValue, "p of \(item.id): \(result.pValue) vs \(item.pValue)")
            #expect(Self.close(result.statistic, item.statistic), "statistic of \(item.id)")
            #expect(Self.close(result.contrast, item.contrast), "contrast of \(item.id)")
            #expect(result.rounds == item.rounds.count)
            #expect(result.smallestPossiblePValue == min(1, 2 / Double(1 << item.rounds.count)))
            let megabytes = total * Double(result.split) / Double(bins)
            #expect(Self.close(megabytes, item.changeMegabytes), "change bytes of \(item.id)")
            let seconds = Self.median(originalDurations.map { $0[0..<result.split].reduce(0, +) })
            #expect(Self.close(seconds, item.changeSeconds), "change time of \(item.id)")
        }
    }

    /// The byte grid by hand: 1 s at 8 Mbit/s then 1 s at 16 (1 MB, then 2 MB): 1.5 MB is reached at 1.25 s.
    @Test func deliveryTimeByHand() throws {
        let cumulative = ChangePointTest.cumulativeMegabytes(mbps: [8, 16], times: [1, 2])
        #expect(cumulative == [1, 3])
        #expect(ChangePointTest.deliveryTime(of: 1.5, cumulative: cumulative, times: [1, 2]) == 1.25)
        #expect(ChangePointTest.deliveryTime(of: 0, cumulative: cumulative, times: [1, 2]) == 0)
        #expect(ChangePointTest.deliveryTime(of: 3.5, cumulative: cumulative, times: [1, 2]) == nil)
        let durations = try #require(
            ChangePointTest.binDurations(mbps: [8, 16], times: [1, 2], megabytes: 3, bins: 3))
        #expect(durations == [1, 0.5, 0.5])
    }

    /// Eight rounds with one step at bin 10 of 20: every round agrees, so only the observed sign vector and its
    /// negation reach the maximum (p = 2/256); a constant added to a round changes nothing (it cancels in every
    /// contrast).
    @Test func stepIsFoundAndConstantsCancel() throws {
        let step = (0..<20).map { $0 < 10 ? -0.5 : 0.0 }
        let rounds = (0..<8).map { round in step.enumerated().map { $1 + 0.01 * Double(($0 * 7 + round * 3) % 5) } }
        let result = try ChangePointTest.test(rounds, minimumSegment: 5)
        #expect(result.split == 10)
        #expect(result.pValue == 2.0 / 256)
        #expect(result.contrast < -0.45)
        let shifted = rounds.enumerated().map { index, row in row.map { $0 + 0.3 * Double(index) - 1 } }
        let same = try ChangePointTest.test(shifted, minimumSegment: 5)
        #expect(same.split == result.split)
        #expect(same.pValue == result.pValue)
        #expect(abs(same.statistic - result.statistic) < 1e-12)
    }

    @Test func rejectsBadInput() {
        #expect(throws: StatisticsError(.emptySample, "")) { try ChangePointTest.test([], minimumSegment: 5) }
        #expect(throws: StatisticsError(.invalidArgument, "")) {
            try ChangePointTest.test([[Double](repeating: 0, count: 9)], minimumSegment: 5)
        }
        #expect(throws: StatisticsError(.invalidArgument, "")) {
            try ChangePointTest.test([[Double](repeating: 0, count: 10), [0]], minimumSegment: 5)
        }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) {
            try ChangePointTest.test([[Double](repeating: .nan, count: 10)], minimumSegment: 5)
        }
        #expect(throws: StatisticsError(.invalidArgument, "")) {
            try ChangePointTest.test(
                [[Double]](repeating: [Double](repeating: 0, count: 10), count: ChangePointTest.maximumRounds + 1),
                minimumSegment: 5)
        }
    }
}
