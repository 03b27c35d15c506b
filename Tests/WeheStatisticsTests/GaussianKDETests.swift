import Foundation
import Testing
import WeheStatistics

/// Golden comparisons of the kernel density with the formula of analysis.md §4.6 (evaluated by NumPy) and with
/// SciPy 1.17.1 `gaussian_kde` (Scott and Silverman bandwidths).
@Suite struct GaussianKDEGoldenTests {
    struct Case: Decodable, Sendable {
        var id: String
        var samples: SampleSpec
        var rule: String
        var bandwidth: Double
        var points: [Double]
        var densities: [Double]
    }

    @Test func densitiesMatchGoldens() throws {
        let cases = try Golden.cases("kde", as: Case.self)
        #expect(cases.count >= 15)
        var fixed = ErrorTracker("KDE fixed bandwidth")
        var sciPy = ErrorTracker("KDE SciPy rules")
        var bandwidths = ErrorTracker("KDE rule bandwidth")
        for item in cases {
            let samples = try item.samples.materialize()
            #expect(item.samples.verifyReplay(samples), "replay of \(item.id)")
            let kde: GaussianKDE
            switch item.rule {
            case "scott": kde = try GaussianKDE(samples: samples, rule: .scott)
            case "silverman": kde = try GaussianKDE(samples: samples, rule: .silverman)
            default: kde = try GaussianKDE(samples: samples, bandwidth: item.bandwidth)
            }
            let label = "\(item.id) \(item.rule)"
            if item.rule != "fixed" {
                #expect(bandwidths.record(kde.bandwidth, item.bandwidth, label) <= 1e-13, "bandwidth of \(label)")
            }
            let values = kde.densities(at: item.points)
            for (index, expected) in item.densities.enumerated() {
                // Densities far below the peak are sums of tiny exponentials; compare them on the peak's scale.
                let peak = item.densities.max() ?? 1
                let error = abs(values[index] - expected) / max(abs(expected), 1e-6 * peak)
                if item.rule == "fixed" {
                    fixed.record(values[index], expected, "\(label) x=\(item.points[index])")
                } else {
                    sciPy.record(values[index], expected, "\(label) x=\(item.points[index])")
                }
                #expect(error <= 1e-11, "\(label) at \(item.points[index]): \(values[index]) vs \(expected)")
            }
        }
        for tracker in [fixed, sciPy, bandwidths] { print(tracker.summary) }
    }

    @Test func integratesToOneAndRejectsBadBandwidth() throws {
        let kde = try GaussianKDE(samples: [1, 1.5, 4, 4.2, 9], bandwidth: 0.3)
        // Trapezoidal rule over ±12 bandwidths around the data.
        let step = 0.001
        var total = 0.0
        var x = -3.0
        while x < 13 {
            total += kde.density(at: x) * step
            x += step
        }
        #expect(abs(total - 1) < 1e-9)
        #expect(kde.density(at: .infinity) == 0)
        #expect(throws: StatisticsError(.invalidArgument, "")) { try GaussianKDE(samples: [1, 2], bandwidth: 0) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try GaussianKDE(samples: [1, 2], bandwidth: -1) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try GaussianKDE(samples: [2, 2, 2], rule: .scott) }
        #expect(throws: StatisticsError(.invalidArgument, "")) { try GaussianKDE(samples: [2], rule: .silverman) }
        #expect(throws: StatisticsError(.emptySample, "")) { try GaussianKDE(samples: [], bandwidth: 0.1) }
        #expect(throws: StatisticsError(.nonFiniteValue, "")) { try GaussianKDE(samples: [.infinity], bandwidth: 1) }
    }
}
