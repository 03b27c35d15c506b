import Foundation
import Testing
import WeheStatistics

/// The hand-checkable values of analysis.md §2.3 and the vectors of §8.1–8.3 (given there to about six digits).
@Suite struct SpecVectorTests {
    /// analysis.md §8: `cyc(b, s, n, m)[k] = b + s·(((7k) mod m) − (m − 1)/2)`.
    static func cyc(_ base: Double, _ spread: Double, n: Int = 100, m: Int = 10) -> [Double] {
        (0..<n).map { k in base + spread * (Double((7 * k) % m) - Double(m - 1) / 2) }
    }

    static func close(_ actual: Double, _ expected: Double, relative: Double = 5e-6) -> Bool {
        abs(actual - expected) <= relative * abs(expected)
    }

    /// 2/C(200, 100) by a product of ratios (relative error ~1e-14), independent of the lattice walk.
    static let twoOverBinomial200: Double = {
        var value = 2.0
        for k in 1...100 { value *= Double(k) / Double(100 + k) }
        return value
    }()

    struct HandCase: Sendable, CustomTestStringConvertible {
        var a: [Double]
        var b: [Double]
        var d: Double
        var p: Double
        var testDescription: String { "\(a) vs \(b)" }
    }

    static let handCases: [HandCase] = [
        HandCase(a: [1, 2, 3], b: [4, 5, 6], d: 1, p: 0.1),
        // 0.044444 in the spec is 2/C(10, 2) = 2/45 rounded.
        HandCase(a: [1, 2, 3, 4, 5, 6, 7, 8], b: [9, 10], d: 1, p: 2.0 / 45),
        HandCase(a: [1, 2, 3, 4], b: [2.5, 5, 6], d: 0.6667, p: 0.4),
        HandCase(a: [1, 1, 2, 2, 3], b: [1, 2, 2, 3, 3, 3], d: 0.3, p: 0.896104),
        HandCase(a: (1...10).map(Double.init), b: (3...12).map { Double($0) + 0.5 }, d: 0.3, p: 0.786930),
    ]

    @Test(arguments: handCases)
    func handCheckedKolmogorovSmirnov(item: HandCase) throws {
        let result = try KolmogorovSmirnov.twoSample(item.a, item.b)
        #expect(result.method == .exact)
        #expect(abs(result.statistic - item.d) < 5e-5)
        #expect(Self.close(result.pValue, item.p), "p = \(result.pValue), spec \(item.p)")
    }

    @Test func exactSmallestPValues() throws {
        let separated = try KolmogorovSmirnov.twoSample(Self.cyc(1.5, 0.0625), Self.cyc(8, 0.25))
        #expect(abs(separated.pValue / Self.twoOverBinomial200 - 1) < 1e-12)
        // §2.6: with 10 values per replay the smallest p is 2/C(20, 10) ≈ 1.08e-5.
        let ten = try KolmogorovSmirnov.twoSample((0..<10).map(Double.init), (20..<30).map(Double.init))
        #expect(abs(ten.pValue * 184_756 / 2 - 1) < 1e-13)
    }

    struct PerTestVector: Sendable, CustomTestStringConvertible {
        var id: String
        var original: [Double]
        var control: [Double]
        var area: Double
        var pValue: Double
        var d: Double
        var legacyArea: Double
        var testDescription: String { id }
    }

    static let perTestVectors: [PerTestVector] = [
        .init(
            id: "V1", original: cyc(1.5, 0.0625), control: cyc(8, 0.25), area: 0.8125, pValue: 2.20876e-59, d: 1,
            legacyArea: 3.6283),
        .init(
            id: "V2", original: cyc(8, 0.25), control: cyc(8, 0.25, m: 11), area: -0.001563, pValue: 0.702057,
            d: 0.1, legacyArea: -0.0014),
        .init(
            id: "V3", original: cyc(5, 0.125), control: cyc(8, 0.125), area: 0.375, pValue: 2.20876e-59, d: 1,
            legacyArea: 0.5366),
        .init(
            id: "V4", original: cyc(12, 0.25), control: cyc(20, 0.25), area: 0.4, pValue: 2.20876e-59, d: 1,
            legacyArea: 0.6064),
        .init(
            id: "V5", original: cyc(8, 0.125), control: cyc(2, 0.0625), area: -0.75, pValue: 2.20876e-59, d: 1,
            legacyArea: -2.6162),
        .init(
            id: "V6", original: Array(repeating: 0.5, count: 6) + Array(repeating: 10, count: 4),
            control: Array(repeating: 10, count: 10), area: 0.57, pValue: 0.0524476, d: 0.6, legacyArea: 0.57),
        .init(
            id: "V7", original: Array((0..<50).map { _ in [5.75, 6.25] }.joined()),
            control: Array((0..<50).map { _ in [9.75, 10.25] }.joined()), area: 0.4, pValue: 2.20876e-59, d: 1,
            legacyArea: 0.6368),
        .init(
            id: "V8", original: Array(repeating: 0, count: 50) + Array(repeating: 8, count: 50),
            control: Array(repeating: 8, count: 100), area: 0.5, pValue: 1, d: 0, legacyArea: 0.0050),
        .init(
            id: "V9", original: Array(repeating: 1, count: 10) + Array(repeating: 5, count: 6),
            control: Array(repeating: 5, count: 16), area: 0.5, pValue: 0.00301521, d: 0.625, legacyArea: 0.5),
        .init(
            id: "V10", original: cyc(7.5, 0.25, n: 60), control: cyc(8, 0.25, n: 60, m: 11), area: 0.062988,
            pValue: 0.0276283, d: 0.2667, legacyArea: 0.0578),
    ]

    @Test(arguments: perTestVectors)
    func perTestStatistics(vector: PerTestVector) throws {
        let area = try Area.current(original: vector.original, control: vector.control)
        #expect(abs(area - vector.area) <= 5e-7 + 5e-6 * abs(vector.area), "area \(area)")
        // KS runs on the zero-free lists (§2.1 step 4).
        let ks = try KolmogorovSmirnov.twoSample(vector.original.filter { $0 > 0 }, vector.control.filter { $0 > 0 })
        #expect(abs(ks.statistic - vector.d) < 5e-5, "D \(ks.statistic)")
        #expect(Self.close(ks.pValue, vector.pValue), "p \(ks.pValue)")
        // The legacy area is given to four decimals.
        let legacy = try Area.legacy(original: vector.original, control: vector.control)
        #expect(abs(legacy - vector.legacyArea) <= 5e-5, "legacy area \(legacy)")
    }

    /// Appendix A: the WeHeY reference distribution T_diff.
    static let tDiff: [Double] = [
        2.4366978112996147, 2.6316889792652307, 7.021798248112352, 11.749219341067423, 17.974639019130663,
        24.12620022118686, 41.485727243346425, 16.0837101760852, 2.504179749737556, 19.07435353307769,
        3.3771722560922828, 4.2105263157894885, 6.0609799545379, 4.227098400605939, 29.7020599897561,
        6.003965993723825, 0.0345254646387867, 6.097560975609758, 4.925126995852869, 3.970845051454762,
        18.087188150172707, 29.629629629629623, 34.07919624033304, 1.560386226503917, 18.492865532471384,
        5.000000000000003, 1.408450704225355, 48.83720930232558, 7.527063384878896, 34.14634146341463,
        19.147774458553897, 58.554580689858106, 7.8893950901943715, 8.433734939759036, 7.564803529847579,
        10.714285714285728, 30.76923076923076, 1.3444648448840386, 4.4444444444444695, 3.5287349500082312,
        16.01873627836116, 0.0329867146723312, 9.70921238021156, 14.326004619194672, 47.315667011672055,
        16.000000000000032, 46.85153120046125, 20.26331535008398, 9.400975537888074, 25.02930425489704,
        19.20408641858571, 1.3623893666786158, 23.163871918632815, 12.614644485677612, 8.7766976634616,
        55.94405594405594, 4.972387152330587, 6.89655172413794, 7.193750106302812, 8.62498354041001,
        6.952248105835286, 31.85996959421561, 34.615384615384606, 52.35602094240837, 2.904276589359697,
        45.98578477516633, 8.07757192481785, 1.351351351351337, 5.92547680396365, 1.3444648448840386,
        15.884630604146311, 3.799074423244432, 6.23914643156962, 1.1902712614142192, 6.25000000000001,
        10.192938004389116, 50.26178010471203, 0.0, 9.111113711072564, 6.25000000000001,
    ]

    /// The percent difference of §6.3 step 3 for constant lists: |S̄ − P̄| / max(S̄, P̄) · 100.
    static func percentDifference(single: Double, pairSum: Double) -> Double {
        abs(single - pairSum) / max(single, pairSum) * 100
    }

    struct ThroughputSumCase: Sendable, CustomTestStringConvertible {
        var name: String
        var differences: [Double]
        var u1: Double
        var p: Double
        var testDescription: String { name }
    }

    static func constant(_ value: Double) -> [Double] { [Double](repeating: value, count: 80) }

    static let throughputSumCases: [ThroughputSumCase] = [
        ThroughputSumCase(name: "T_diff", differences: tDiff, u1: 3200, p: 0.500681),
        ThroughputSumCase(name: "0.5·T_diff", differences: tDiff.map { 0.5 * $0 }, u1: 2159.5, p: 1.93249e-4),
        ThroughputSumCase(name: "[2]×80", differences: constant(2), u1: 800, p: 1.03053e-18),
        ThroughputSumCase(name: "[8.5]×80", differences: constant(8.5), u1: 3200, p: 0.500728),
        ThroughputSumCase(name: "[25]×80", differences: constant(25), u1: 5040, p: 0.99999999999),
        ThroughputSumCase(
            name: "sum equals single", differences: constant(percentDifference(single: 5, pairSum: 2.5 + 2.5)),
            u1: 40, p: 3.36546e-31),
        ThroughputSumCase(
            name: "sum twice single", differences: constant(percentDifference(single: 5, pairSum: 5 + 5)),
            u1: 6080, p: 1.0),
        ThroughputSumCase(
            name: "sum 1.10×single", differences: constant(percentDifference(single: 5, pairSum: 2.75 + 2.75)),
            u1: 3360, p: 0.720907),
        ThroughputSumCase(
            name: "sum 1.05×single", differences: constant(percentDifference(single: 5, pairSum: 2.625 + 2.625)),
            u1: 1680, p: 1.48270e-8),
    ]

    @Test(arguments: throughputSumCases)
    func weheyThroughputSum(item: ThroughputSumCase) throws {
        let result = try MannWhitneyU.test(item.differences, Self.tDiff, alternative: .less)
        #expect(result.method == .asymptotic)
        #expect(result.u1 == item.u1, "U1 \(result.u1)")
        #expect(abs(result.pValue - item.p) <= 5e-6 * item.p + 1e-11, "p \(result.pValue)")
    }

    /// §6.4 step 6: keep intervals where either side lost something; of each run of loss-free rows keep the first.
    static func collapse(_ a: [Double], _ b: [Double]) -> ([Double], [Double]) {
        var x: [Double] = []
        var y: [Double] = []
        var previousWasLossFree = false
        for (first, second) in zip(a, b) {
            let lossFree = first == 0 && second == 0
            if lossFree && previousWasLossFree { continue }
            x.append(first)
            y.append(second)
            previousWasLossFree = lossFree
        }
        return (x, y)
    }

    @Test func weheyLossCorrelation() throws {
        let a1: [Double] = [0, 0, 0.02, 0.05, 0, 0, 0, 0.03, 0.01, 0, 0.04, 0, 0, 0, 0.02, 0.06, 0, 0, 0.01, 0]
        let a2: [Double] = [0, 0, 0.01, 0.04, 0, 0, 0, 0.02, 0.02, 0, 0.05, 0, 0, 0, 0.01, 0.05, 0, 0, 0.02, 0]
        let (x, y) = Self.collapse(a1, a2)
        #expect(x.count == 14)
        let first = try Spearman.correlation(x, y, alternative: .greater)
        #expect(Self.close(first.rho, 0.939915))
        #expect(Self.close(first.pValue, 2.98184e-7))

        let b1: [Double] = [0, 0.03, 0, 0, 0.02, 0, 0, 0.01, 0, 0, 0.04, 0, 0, 0.02, 0, 0, 0.05, 0, 0, 0.01]
        let b2: [Double] = [0.02, 0, 0, 0.03, 0, 0, 0.01, 0, 0, 0.02, 0, 0, 0.04, 0, 0, 0.03, 0, 0, 0.01, 0]
        let (u, v) = Self.collapse(b1, b2)
        #expect(u.count == 20)
        let second = try Spearman.correlation(u, v, alternative: .greater)
        #expect(Self.close(second.rho, -0.508563))
        #expect(Self.close(second.pValue, 0.988982))

        let zeros = [Double](repeating: 0, count: 12)
        let (z1, z2) = Self.collapse(zeros, zeros)
        #expect(z1.count == 1)
        #expect(try Spearman.correlation(z1, z2, alternative: .greater).pValue.isNaN)
    }
}
