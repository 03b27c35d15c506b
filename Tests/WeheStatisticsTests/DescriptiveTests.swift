import Foundation
import Testing
import WeheStatistics

/// Golden comparisons with NumPy `percentile`/`median`/`mean`/`std` and SciPy `rankdata`.
@Suite struct DescriptiveGoldenTests {
    struct Case: Decodable, Sendable {
        var id: String
        var values: SampleSpec
        var qs: [Double]
        var percentiles: [Double]
        var median: Double
        var mean: Double
        var std: Double
        var ranks: [Double]?
    }

    @Test func matchesNumPy() throws {
        let cases = try Golden.cases("descriptive", as: Case.self)
        var percentiles = ErrorTracker("percentile")
        var moments = ErrorTracker("mean/std")
        for item in cases {
            let values = try item.values.materialize()
            #expect(item.values.verifyReplay(values), "replay of \(item.id)")
            for (q, expected) in zip(item.qs, item.percentiles) {
                let value = try Descriptive.percentile(values, q)
                #expect(percentiles.record(value, expected, "\(item.id) q=\(q)") <= 1e-15, "\(item.id) q=\(q)")
            }
            let each = try item.qs.map { try Descriptive.percentile(values, $0) }
            #expect(try Descriptive.percentiles(values, item.qs) == each)
            #expect(try Descriptive.median(values) == item.median, "median of \(item.id)")
            #expect(moments.record(try Descriptive.mean(values), item.mean, "mean \(item.id)") <= 1e-14)
            let std = try Descriptive.populationStandardDeviation(values)
            #expect(moments.record(std, item.std, "std \(item.id)") <= 1e-13, "std of \(item.id)")
            if let ranks = item.ranks {
                #expect(try Descriptive.ranks(values) == ranks, "ranks of \(item.id)")
            }
        }
        print(percentiles.summary)
        print(moments.summary)
    }

    @Test func rejectsEmptyAndNonFiniteInput() {
        let empty: [Double] = []
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.mean(empty) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.median(empty) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.percentile(empty, 50) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.populationStandardDeviation(empty) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.ranks(empty) }
        #expect(throws: StatisticsError(.emptySample, "")) { try Descriptive.maximum(empty) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try Descriptive.mean([1, .nan]) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try Descriptive.median([-.infinity, 2]) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try Descriptive.percentile([1, 2], 100.5) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try Descriptive.percentile([1, 2], .nan) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try Descriptive.sampleStandardDeviation([1]) }
    }

    @Test func smallCasesByHand() throws {
        #expect(try Descriptive.ranks([10, 20, 10, 30, 20, 20]) == [1.5, 4, 1.5, 6, 4, 4])
        #expect(try Descriptive.minimum([3, -1, 2]) == -1)
        #expect(try Descriptive.maximum([3, -1, 2]) == 3)
        #expect(try Descriptive.sampleStandardDeviation([2, 4, 4, 4, 5, 5, 7, 9]) == (32.0 / 7).squareRoot())
        #expect(try Descriptive.populationStandardDeviation([2, 4, 4, 4, 5, 5, 7, 9]) == 2)
    }
}
