import Foundation
import Testing
import WeheAnalysis
import WeheCore
import WeheStatistics

/// The sensitive verdict: its rule on hand-made rounds, and its calibration on synthetic unthrottled pairs whose
/// path rate is autocorrelated and shared with cross traffic (constant, on/off, heavy, and an on/off pattern locked
/// to the rounds, the worst case for replays in a fixed order).
///
/// The synthetic loops take seconds of CPU each and yield between trials: Swift Testing runs every suite of the
/// process on one cooperative pool (two threads here), and a loop that never yields holds a thread from the
/// in-process servers of other suites, whose deadline tests then measured seconds of delay in full runs.
@Suite struct SensitiveAnalysisTests {
    @Test func minimumRoundsReachAlpha() {
        #expect(SensitiveAnalysis().minimumRounds == 8)  // 2/2⁸ = 0.0078 ≤ 0.008 < 2/2⁷
        #expect(SensitiveAnalysis().alpha == 0.008)
        #expect(SensitiveAnalysis(alpha: 0.05).minimumRounds == 6)
    }

    @Test func consistentSlowdownIsDifferentiation() {
        let originals = [30.1, 29.5, 31.0, 30.3, 29.8, 30.6, 29.9, 30.2, 30.0, 29.7]
        let controls = [40.2, 39.1, 41.0, 40.5, 39.6, 40.9, 40.0, 40.1, 39.8, 40.4]
        let summary = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
        #expect(summary.verdict == .differentiation)
        #expect(summary.direction == .throttled)
        #expect(summary.rounds == 10)
        #expect(summary.pValue == 2.0 / 1024)
        #expect(abs(summary.slowdown - 0.25) < 0.01)
        #expect(summary.slowdownLower > 0.2 && summary.slowdownUpper < 0.3)
        #expect(summary.slowdownLower <= summary.slowdown && summary.slowdown <= summary.slowdownUpper)
        #expect(summary.effectText.hasPrefix("slowed by 25 % (95 % CI"))
    }

    @Test func faithfulPathIsNoDifferentiation() {
        let originals = [40.0, 39.0, 41.5, 40.2, 38.8, 40.9, 40.1, 39.5, 40.3, 39.9]
        let controls = [39.5, 40.1, 40.9, 40.0, 39.6, 40.2, 40.7, 39.2, 40.0, 40.6]
        let summary = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
        #expect(summary.verdict == .noDifferentiation)
        #expect(summary.direction == nil)
        #expect(summary.pValue > 0.01)
        #expect(summary.slowdownLower < 0 && summary.slowdownUpper > 0)
    }

    /// A tiny but consistent difference (0.3 %, seen on the unthrottled testbed path) is inside the 5 % margin: no
    /// differentiation, although the plain sign-flip test rejects "no difference" (p 2/1024). Fails without the margin.
    @Test func tinyConsistentDifferenceIsNotDifferentiation() throws {
        let controls = [89.5, 89.7, 89.6, 89.8, 89.4, 89.6, 89.7, 89.5, 89.6, 89.8]
        let originals = controls.map { $0 * 0.997 }
        let differences = zip(originals, controls).map { log($0 / $1) }
        #expect(try SignFlipTest.test(differences).pValue == 2.0 / 1024)
        let summary = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
        #expect(summary.verdict == .noDifferentiation)
        #expect(summary.pValue == 1)
        // Just past the margin (6 % slower in every round) it is differentiation.
        let slower = SensitiveAnalysis().summary(originalMeans: controls.map { $0 * 0.94 }, controlMeans: controls)
        #expect(slower.verdict == .differentiation)
        #expect(slower.direction == .throttled)
        let faster = SensitiveAnalysis().summary(originalMeans: controls.map { $0 * 1.08 }, controlMeans: controls)
        #expect(faster.verdict == .differentiation)
        #expect(faster.direction == .prioritized)
    }

    /// Nine rounds 20 % slower and one 15 % faster: the exact test gives p 22/1024 (more than `alpha`), yet the 95 %
    /// interval lies wholly past the margin (about 10-20 % slower; both by enumerating the 1 024 sign patterns in
    /// Python). That is inconclusive with a note, not "no differentiation" beside "slowed by 18 %"; the same rounds
    /// mirrored are inconclusive the other way. Without the rule both were "no differentiation".
    @Test func intervalPastTheMarginWithoutSignificanceIsInconclusive() throws {
        let controls = [Double](repeating: 40, count: 10)
        let originals = [Double](repeating: 32, count: 9) + [46]
        let summary = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
        #expect(summary.verdict == .inconclusive)
        #expect(abs(summary.pValue - 22.0 / 1024) < 1e-12)
        #expect(summary.slowdownLower > 0.05 && summary.slowdownUpper < 0.25, "\(summary.effectText)")
        let note = try #require(summary.note)
        #expect(note.hasPrefix("the app was slower than its control by more than 5 % across the 95 % interval"))
        let mirrored = SensitiveAnalysis().summary(originalMeans: controls, controlMeans: originals)
        #expect(mirrored.verdict == .inconclusive)
        #expect(mirrored.note?.hasPrefix("the app was faster") == true)
        // A noisy run whose interval still reaches inside the margin stays "no differentiation".
        let noisy = SensitiveAnalysis().summary(
            originalMeans: [32, 32, 32, 46, 46, 32, 32, 40, 40, 32], controlMeans: controls)
        #expect(noisy.verdict == .noDifferentiation, "\(noisy.effectText)")
    }

    @Test func tooFewRoundsIsInconclusive() {
        let summary = SensitiveAnalysis().summary(
            originalMeans: [1, 1, 1, 1, 1], controlMeans: [5, 5, 5, 5, 5])
        #expect(summary.verdict == .inconclusive)
        #expect(summary.note?.hasPrefix("too few rounds (5)") == true)
        let none = SensitiveAnalysis().summary(originalMeans: [0, 0], controlMeans: [0, 0])
        #expect(none.verdict == .inconclusive)
        #expect(none.rounds == 0)
    }

    /// A blocked app (nothing received in any original replay) is a finite, strong slowdown, not a crash.
    @Test func blockedAppIsThrottled() {
        let summary = SensitiveAnalysis().summary(
            originalMeans: [Double](repeating: 0, count: 9), controlMeans: [Double](repeating: 3, count: 9))
        #expect(summary.verdict == .differentiation)
        #expect(summary.direction == .throttled)
        #expect(summary.slowdown > 0.99)
    }

    /// Synthetic rounds. Slot t of 2n has the path rate `base·exp(aₜ)`, aₜ an AR(1) (φ 0.85, σ `volatility`), minus the
    /// cross traffic's share, times 5 % measurement noise; each round's coin puts the app in its first or second
    /// slot. `appFactor` < 1 throttles the app's slots.
    static func simulate(
        rounds: Int, cross: CrossTraffic, appFactor: Double, volatility: Double = 0.2,
        generator: inout SeededGenerator
    ) -> (originals: [Double], controls: [Double]) {
        func gaussian() -> Double {
            let u1 = max(Double.random(in: 0..<1, using: &generator), 1e-300)
            let u2 = Double.random(in: 0..<1, using: &generator)
            return sqrt(-2 * log(u1)) * cos(2 * Double.pi * u2)
        }
        let slots = 2 * rounds
        var level = gaussian() * volatility / sqrt(1 - 0.85 * 0.85)
        let phase = Int.random(in: 0..<8, using: &generator)
        var rates: [Double] = []
        for slot in 0..<slots {
            level = 0.85 * level + volatility * gaussian()
            let share: Double
            switch cross {
            case .none: share = 0
            case .constant: share = 0.3
            case .onOff: share = ((slot + phase) / 3) % 2 == 0 ? 0.5 : 0
            case .heavy: share = 0.7 + 0.1 * gaussian()
            case .lockedToRounds: share = slot % 2 == 0 ? 0.45 : 0
            }
            rates.append(80 * exp(level) * max(0.05, 1 - share) * (1 + 0.05 * gaussian()))
        }
        var originals: [Double] = []
        var controls: [Double] = []
        for round in 0..<rounds {
            let appFirst = Bool.random(using: &generator)
            let first = rates[2 * round]
            let second = rates[2 * round + 1]
            originals.append((appFirst ? first : second) * appFactor)
            controls.append(appFirst ? second : first)
        }
        return (originals, controls)
    }

    enum CrossTraffic: CaseIterable { case none, constant, onOff, heavy, lockedToRounds }

    /// Calibration by measurement: over 20 000 unthrottled synthetic tests of 10 rounds per cross-traffic pattern,
    /// on a very volatile path (the AR(1) log rate has a stationary spread of ±38 %), the sensitive verdict says
    /// differentiation at most 1 % of the time (by construction: ≤ 8/1024 = 0.78 %). The seed is fixed, so the
    /// figures are deterministic; printed.
    @Test(arguments: CrossTraffic.allCases) func falsePositiveRateAtMostOnePercent(_ cross: CrossTraffic) async throws {
        var generator = SeededGenerator(seed: 1800 + UInt64(CrossTraffic.allCases.firstIndex(of: cross) ?? 0))
        let trials = 20_000
        var alarms = 0
        let analysis = SensitiveAnalysis()
        for trial in 0..<trials {
            if trial % 20 == 0 { await Task.yield() }
            let (originals, controls) = Self.simulate(
                rounds: 10, cross: cross, appFactor: 1, generator: &generator)
            let differences = zip(originals, controls).map {
                log(($0 + SensitiveAnalysis.floorMbps) / ($1 + SensitiveAnalysis.floorMbps))
            }
            // The plain two-sided test at alpha (the verdict, with its margin, can only be more conservative).
            if try SignFlipTest.test(differences).pValue <= analysis.alpha { alarms += 1 }
        }
        let rate = Double(alarms) / Double(trials)
        print("sensitive verdict, unthrottled synthetic \(cross): \(alarms)/\(trials) false positives (\(rate))")
        #expect(rate <= 0.01)
        // The verdict rule says differentiation exactly when the test's p is at most alpha (fewer trials: the
        // interval's bisection is slower).
        var verdictAlarms = 0
        var unsettled = 0
        for _ in 0..<300 {
            await Task.yield()
            let (originals, controls) = Self.simulate(rounds: 10, cross: cross, appFactor: 1, generator: &generator)
            let summary = analysis.summary(originalMeans: originals, controlMeans: controls)
            #expect((summary.verdict == .differentiation) == (summary.pValue <= analysis.alpha))
            // Inconclusive only when the interval lies past the margin (under no differentiation a 95 % interval
            // misses the truth at most 5 % of the time, so no more often than that).
            if summary.verdict == .inconclusive {
                unsettled += 1
                #expect(summary.slowdownLower > analysis.margin || summary.slowdownUpper < -analysis.margin)
            }
            if summary.verdict == .differentiation { verdictAlarms += 1 }
        }
        print(
            "sensitive verdict rule, unthrottled synthetic \(cross): \(verdictAlarms)/300 differentiation, "
                + "\(unsettled)/300 inconclusive")
        #expect(unsettled <= 30)
    }

    /// Power: a 25 % slowdown of the app (a cap at 75 % of its need) on a path whose rate wanders by about ±10 %
    /// (AR(1) σ 0.05) is found in at least 95 % of the tests without cross traffic, with constant or on/off cross
    /// traffic. Cross traffic locked to the rounds' first slot (45 % share) only adds noise to the randomized
    /// design: power drops (printed) but the false-positive bound above still holds.
    @Test(arguments: CrossTraffic.allCases) func detectsAQuarterSlowdown(_ cross: CrossTraffic) async {
        var generator = SeededGenerator(seed: 2800)
        var found = 0
        let trials = 200
        for _ in 0..<trials {
            await Task.yield()
            let (originals, controls) = Self.simulate(
                rounds: 10, cross: cross, appFactor: 0.75, volatility: 0.05, generator: &generator)
            let summary = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
            if summary.verdict == .differentiation && summary.direction == .throttled { found += 1 }
        }
        print("sensitive verdict, 25 % slowdown, synthetic \(cross): \(found)/\(trials) detected")
        if cross == .none || cross == .constant {
            #expect(Double(found) / Double(trials) >= 0.95)
        }
    }
}
