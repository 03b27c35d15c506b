import Foundation
import Testing
import WeheStatistics

/// Golden comparisons with SciPy 1.17.1 `ks_2samp`, `kstwo.sf` and `smirnov`.
///
/// Measured worst relative errors against SciPy (Linux x86_64; the tests print them as `[golden]` lines):
///   exact p ≥ 1e-15: 5.3e-15; exact 1e-300 ≤ p < 1e-15 (down to 3.7e-300): 7.8e-14; asymptotic p: 4.0e-13;
///   `kstwo.sf` over all branches: 9.5e-12 (n = 100, d = 0.2, where both sides compute 1 − cdf ≈ 6.7e-4);
///   `smirnov`: 3.8e-13; D: exact equality. Asserted: 1e-12 (exact), 1e-10 (asymptotic and distributions).
@Suite struct KolmogorovSmirnovGoldenTests {
    struct Case: Decodable, Sendable {
        var id: String
        var a: SampleSpec
        var b: SampleSpec
        var method: String
        var usedMethod: String
        var statistic: Double
        var pValue: Double
    }

    struct DistributionCase: Decodable, Sendable {
        var kind: String
        var n: Int
        var d: Double
        var value: Double
    }

    static func method(_ name: String) -> KolmogorovSmirnov.Method {
        switch name {
        case "exact": .exact
        case "asymptotic": .asymptotic
        default: .auto
        }
    }

    @Test func twoSampleMatchesSciPy() throws {
        let cases = try Golden.cases("ks", as: Case.self)
        #expect(cases.count > 80)
        var exactModerate = ErrorTracker("KS exact p >= 1e-15")
        var exactTiny = ErrorTracker("KS exact p < 1e-15")
        var asymptotic = ErrorTracker("KS asymptotic p")
        var statistic = ErrorTracker("KS statistic D")
        for item in cases {
            let a = try item.a.materialize()
            let b = try item.b.materialize()
            #expect(item.a.verifyReplay(a) && item.b.verifyReplay(b), "replay of \(item.id)")
            let result = try KolmogorovSmirnov.twoSample(a, b, method: Self.method(item.method))
            #expect(result.method == Self.method(item.usedMethod), "method of \(item.id)")
            let dError = statistic.record(result.statistic, item.statistic, item.id)
            #expect(dError <= 1e-14, "D of \(item.id): \(result.statistic) vs \(item.statistic)")
            if item.pValue < 1e-300 {
                // SciPy underflows to 0 here; the first-exit sum may still carry a subnormal value.
                #expect(result.pValue < 1e-300, "p of \(item.id): \(result.pValue) vs \(item.pValue)")
                continue
            }
            let error: Double
            if result.method == .asymptotic {
                error = asymptotic.record(result.pValue, item.pValue, item.id)
            } else if item.pValue >= 1e-15 {
                error = exactModerate.record(result.pValue, item.pValue, item.id)
            } else {
                error = exactTiny.record(result.pValue, item.pValue, item.id)
            }
            let tolerance = result.method == .exact ? 1e-12 : 1e-10
            #expect(error <= tolerance, "p of \(item.id): \(result.pValue) vs \(item.pValue)")
        }
        for tracker in [exactModerate, exactTiny, asymptotic, statistic] { print(tracker.summary) }
    }

    @Test func kolmogorovDistributionMatchesSciPy() throws {
        let cases = try Golden.cases("kolmogorov", as: DistributionCase.self)
        var kolmogorov = ErrorTracker("kstwo.sf")
        var smirnov = ErrorTracker("smirnov")
        for item in cases {
            let label = "\(item.kind)(n=\(item.n), d=\(item.d))"
            let value =
                item.kind == "smirnov"
                ? KolmogorovSmirnov.smirnovSurvival(item.d, sampleSize: item.n)
                : KolmogorovSmirnov.kolmogorovSurvival(item.d, sampleSize: item.n)
            if item.value < 1e-300 {
                #expect(value < 1e-300, "\(label): \(value) vs \(item.value)")
                continue
            }
            let error =
                item.kind == "smirnov"
                ? smirnov.record(value, item.value, label) : kolmogorov.record(value, item.value, label)
            #expect(error <= 1e-10, "\(label): \(value) vs \(item.value)")
        }
        print(kolmogorov.summary)
        print(smirnov.summary)
    }
}
