import Foundation
import Testing
import WeheAnalysis
import WeheCore
import WeheStatistics

/// The adaptive verdict's stopping rule: its stops on hand-made rounds, its forecast, the confirming rounds, the byte
/// floor, the caps and rates over equal bytes; by simulation (`AdaptiveAnalysisTests+Simulation.swift`) its
/// false-positive rate under optional stopping (synthetic unthrottled rounds with AR(1) path rates and cross traffic,
/// including on/off patterns locked to the round slots) and its power (rounds needed at 10/20/30 %).
///
/// The simulations' loops yield between trials (the suites share a two-thread pool with in-process servers).
@Suite struct AdaptiveAnalysisTests {
    static func round(_ original: Double, _ control: Double, bytes: Int = 1_000_000) -> AdaptiveAnalysis.Round {
        AdaptiveAnalysis.Round(
            originalMbps: original, controlMbps: control, comparedBytes: bytes, totalBytes: 2 * bytes + 20_000,
            durationSeconds: Double(bytes) * 8 / 1e6 / max(original, 0.001) + Double(bytes) * 8 / 1e6
                / max(control, 0.001))
    }

    /// An app slowed by 26 % in every round: the throttled wealth grows by (1 + λ) per round and passes 2/α = 200
    /// at round 11, the fewest rounds the mixture allows (`BettingTest.fewestRounds`); not before.
    @Test func consistentSlowdownStopsAtTheFewestRounds() throws {
        let rule = AdaptiveAnalysis()
        #expect(rule.fewestRoundsForDifferentiation == 11)
        var monitor = AdaptiveAnalysis.Monitor(rule)
        var stops: [AdaptiveStopReason?] = []
        for index in 0..<12 {
            stops.append(monitor.add(Self.round(30 + Double(index % 3) * 0.1, 40.5)))
            if stops.last! != nil { break }
        }
        #expect(stops.count == 11)
        #expect(stops.dropLast().allSatisfy { $0 == nil })
        let decision = monitor.decision()
        #expect(decision.stopReason == .differentiation)
        #expect(decision.verdict == .differentiation)
        #expect(decision.direction == .throttled)
        #expect(decision.wealthThrottled >= 200)
        #expect(decision.wealthPrioritized < 1)
        #expect(decision.slowdownLower > 0 && decision.slowdownLower <= decision.slowdown)
        #expect(decision.slowdown <= decision.slowdownUpper)
        #expect(abs(decision.slowdown - 0.258) < 0.01)
        #expect(decision.bytes == 11 * 2_020_000)
        // `decide` on the same rounds is the same decision.
        #expect(rule.decide(monitor.rounds) == decision)
        // The app faster: prioritized.
        let faster = rule.decide((0..<11).map { _ in Self.round(45, 30) })
        #expect(faster.stopReason == .differentiation)
        #expect(faster.direction == .prioritized)
    }

    /// The unthrottled testbed path's artefact: the app 0.07-0.21 % faster in most rounds. A sign test calls it
    /// differentiation after a dozen rounds; the clipped magnitudes count it as the small thing it is, and the rule
    /// stops for equivalence (no margin needed for the false-positive bound, only to name "small").
    @Test func tinyConsistentDifferenceEndsInEquivalence() throws {
        let rule = AdaptiveAnalysis(minimumBytesPerFlow: 1_000_000)
        var monitor = AdaptiveAnalysis.Monitor(rule)
        var stop: AdaptiveStopReason?
        var index = 0
        while stop == nil {
            let factor = 1.0007 + 0.0014 * Double(index % 5) / 4
            stop = monitor.add(Self.round(50 * factor, 50))
            index += 1
        }
        let decision = monitor.decision()
        #expect(decision.stopReason == .equivalence)
        #expect(decision.verdict == .noDifferentiation)
        #expect(decision.slowdownLower > -0.05 && decision.slowdownUpper < 0.05)
        #expect(decision.rounds <= 20)
        print("adaptive, app 0.07-0.21 % faster in every round: equivalence after \(decision.rounds) rounds")
        // The plain sign-flip test at the same rounds rejects "no difference".
        let differences = monitor.differences
        #expect(try SignFlipTest.test(differences).pValue < 0.01)
    }

    /// The equivalence stop at its own level (the client's 0.05, clipping at 5 %, stakes from 0.5): identical rounds
    /// stop after 7 rounds; with all stakes 8, and at the false-positive level 0.01 11 (`(1/50)·Σₖ(1 + 0.976·λₖ)ⁿ`
    /// passes 2/0.05 = 40 at n = 8 and 2/0.01 = 200 at n = 11; with `λₖ` in [0.5, 1) it passes 40 at n = 7). The
    /// interval shown is the one the stop was decided on (95 %), inside ±5 %. The differentiation stop keeps α = 0.01
    /// and the full mixture.
    @Test func equivalenceAtItsOwnLevel() throws {
        func roundsToEquivalence(_ rule: AdaptiveAnalysis) -> (Int, AdaptiveAnalysis.Decision) {
            var monitor = AdaptiveAnalysis.Monitor(rule)
            var count = 0
            while count < 60 {
                count += 1
                if monitor.add(Self.round(50, 50)) != nil { break }
            }
            return (count, monitor.decision())
        }
        let client = AdaptiveAnalysis(
            equivalenceAlpha: 0.05, clipScale: 0.05, minimumBytesPerFlow: 0, equivalenceLowestBet: 0.5)
        let (rounds, decision) = roundsToEquivalence(client)
        #expect(rounds == 7)
        #expect(
            roundsToEquivalence(AdaptiveAnalysis(equivalenceAlpha: 0.05, clipScale: 0.05, minimumBytesPerFlow: 0)).0
                == 8)
        #expect(decision.stopReason == .equivalence)
        #expect(decision.confidenceLevel == 0.95)
        #expect(decision.slowdownLower > -0.05 && decision.slowdownUpper < 0.05)
        let strict = AdaptiveAnalysis(clipScale: 0.05, minimumBytesPerFlow: 0)
        let (strictRounds, strictDecision) = roundsToEquivalence(strict)
        #expect(strictRounds == 11)
        #expect(strictDecision.confidenceLevel == 0.99)
        // The differentiation stop is the same under both rules: 11 concordant rounds at α = 0.01.
        #expect(client.fewestRoundsForDifferentiation == 11)
        let slowed = client.decide((0..<11).map { _ in Self.round(30, 40) })
        #expect(slowed.stopReason == .differentiation)
        #expect(slowed.confidenceLevel == 0.99)
        #expect(client.decide((0..<10).map { _ in Self.round(30, 40) }).stopReason == nil)
    }

    /// The look-ahead that lets the client make the long round the last of an equivalence: true exactly when one
    /// more agreeing round would stop for equivalence (after 6 identical rounds under the client's rule, not after
    /// 5), never once the rule has stopped, and not when the rounds so far disagree.
    @Test func oneAgreeingRoundLookAhead() {
        let client = AdaptiveAnalysis(
            equivalenceAlpha: 0.05, clipScale: 0.05, minimumBytesPerFlow: 0, equivalenceLowestBet: 0.5)
        var monitor = AdaptiveAnalysis.Monitor(client)
        var answers: [Bool] = []
        for _ in 0..<7 {
            answers.append(monitor.equivalenceNeedsOneAgreeingRound)
            monitor.add(Self.round(50, 50))
        }
        #expect(answers == [false, false, false, false, false, false, true])
        #expect(monitor.stop().reason == .equivalence)
        #expect(!monitor.equivalenceNeedsOneAgreeingRound)
        // Six rounds 4 % apart in alternating directions: inside the margin but not yet sure of it.
        var noisy = AdaptiveAnalysis.Monitor(client)
        for index in 0..<6 { noisy.add(index % 2 == 0 ? Self.round(52, 50) : Self.round(50, 52)) }
        #expect(noisy.stop().reason == nil)
        #expect(!noisy.equivalenceNeedsOneAgreeingRound)
        // The look-ahead does not change the monitor it asks.
        #expect(noisy.rounds.count == 6)
    }

    /// The forecast the client asks before spending past one published test: identical rounds are forecast to
    /// conclude (equivalence after 7 in all under the client's rule, so 3 more after 4), a steady 20 % slowdown to
    /// stop for differentiation at the 11th round, and rounds that swing ±30 % around nothing (a spread of 31 %) to decide within no
    /// horizon the cap would allow. Nothing is forecast once the rule has stopped.
    @Test func forecastOfTheRoundsToDecide() {
        let client = AdaptiveAnalysis(
            equivalenceAlpha: 0.05, clipScale: 0.05, minimumBytesPerFlow: 0, equivalenceLowestBet: 0.5)
        var calm = AdaptiveAnalysis.Monitor(client)
        for _ in 0..<4 { calm.add(Self.round(50, 50)) }
        #expect(calm.forecastRoundsToDecide(within: 40) == 3)
        var slowed = AdaptiveAnalysis.Monitor(client)
        for _ in 0..<4 { slowed.add(Self.round(40, 50)) }
        #expect(slowed.forecastRoundsToDecide(within: 40) == 7)
        #expect(slowed.forecastRoundsToDecide(within: 6) == nil)
        var swinging = AdaptiveAnalysis.Monitor(client)
        for index in 0..<20 { swinging.add(index % 2 == 0 ? Self.round(65, 50) : Self.round(50, 65)) }
        #expect(swinging.stop().reason == nil)
        #expect(swinging.forecastRoundsToDecide(within: 160) == nil)
        #expect(swinging.roundSpreadPercent == 31)
        // The spread the client compares with the long round's ±10 %: the log ratios' sample standard deviation
        // (Python's statistics.stdev of the same twenty values: 0.2691753205034648); identical rounds spread by 0.
        #expect(abs(swinging.roundSpread - 0.2691753205034648) < 1e-12)
        #expect(calm.roundSpread == 0)
        for _ in 0..<7 { calm.add(Self.round(50, 50)) }
        #expect(calm.stop().reason == .equivalence)
        #expect(calm.forecastRoundsToDecide(within: 40) == nil)
    }

    /// The best case the client asks before it buys long rounds to confirm one that differed: the fewest more rounds,
    /// each counting fully one way, to a differentiation stop. Golden values from an independent computation of the
    /// mixture wealth (50 bets, α = 0.01, clipping at 5 %) in Python: 11 from nothing, 11 after six rounds with no
    /// difference (they move no bet), 12 after six rounds with the app 1 % faster and 15 after six at 2 % faster
    /// (each costs the bets on "slower" a little), 8 after three rounds fully slower, 11 after the six at 1 % faster
    /// and one 21 % slower (the long round of a throttle after N bytes).
    @Test func fewestRoundsToConfirmALongRound() {
        let client = AdaptiveAnalysis(
            equivalenceAlpha: 0.05, clipScale: 0.05, minimumBytesPerFlow: 0, equivalenceLowestBet: 0.5)
        func fewest(_ rounds: [AdaptiveAnalysis.Round], slower: Bool = true) -> Int? {
            var monitor = AdaptiveAnalysis.Monitor(client)
            for round in rounds { monitor.add(round) }
            let answer = monitor.fewestRoundsToDifferentiate(slower: slower, within: 60)
            // The look-ahead does not change the monitor it asks.
            #expect(monitor.rounds.count == rounds.count)
            return answer
        }
        #expect(fewest([]) == 11)
        #expect(fewest([]) == client.fewestRoundsForDifferentiation)
        #expect(fewest([], slower: false) == 11)
        #expect(fewest(Array(repeating: Self.round(100, 100), count: 6)) == 11)
        #expect(fewest(Array(repeating: Self.round(101, 100), count: 6)) == 12)
        #expect(fewest(Array(repeating: Self.round(102, 100), count: 6)) == 15)
        #expect(fewest(Array(repeating: Self.round(102, 100), count: 6), slower: false) == 8)
        #expect(fewest(Array(repeating: Self.round(50, 100), count: 3)) == 8)
        #expect(fewest(Array(repeating: Self.round(101, 100), count: 6) + [Self.round(79, 100)]) == 11)
        // Within a limit below the answer: none.
        var monitor = AdaptiveAnalysis.Monitor(client)
        #expect(monitor.fewestRoundsToDifferentiate(slower: true, within: 10) == nil)
        // Once the rule has stopped for differentiation there is nothing to confirm.
        for _ in 0..<11 { monitor.add(Self.round(50, 100)) }
        #expect(monitor.stop().reason == .differentiation)
        #expect(monitor.fewestRoundsToDifferentiate(slower: true, within: 60) == nil)
    }

    /// Without a flow of the minimum size the rule keeps going, says why, and ends at the budget.
    @Test func equivalenceWaitsForTheByteFloor() {
        let rule = AdaptiveAnalysis(minimumBytesPerFlow: 7_000_000, maximumRounds: 30)
        let rounds = (0..<30).map { Self.round(50 * (1 + 0.001 * Double($0 % 3)), 50, bytes: 500_000) }
        let early = rule.decide(Array(rounds.prefix(25)))
        #expect(early.stopReason == nil)
        #expect(early.slowdownLower > -0.05 && early.slowdownUpper < 0.05)
        #expect(early.note?.contains("no flow has carried 7000000 bytes yet (500000)") == true)
        let last = rule.decide(rounds)
        #expect(last.stopReason == .budget)
        #expect(last.verdict == .inconclusive)
        #expect(last.note?.hasPrefix("budget reached at 30 rounds") == true)
        // One round whose flows carried 7 MB lets it stop.
        let long = rule.decide(Array(rounds.prefix(24)) + [Self.round(50, 50, bytes: 7_000_000)])
        #expect(long.stopReason == .equivalence)
    }

    @Test func budgetAndTimeLimitAreInconclusiveWithTheReason() {
        let noisy = (0..<10).map { Self.round($0 % 2 == 0 ? 40 : 60, 50) }
        let bytes = AdaptiveAnalysis(maximumBytes: 15_000_000).decide(noisy)
        #expect(bytes.stopReason == .budget)
        #expect(bytes.note?.hasPrefix("budget reached at 20200000 bytes (cap 15000000)") == true)
        let time = AdaptiveAnalysis(timeLimitSeconds: 30).decide(noisy, elapsedSeconds: 31)
        #expect(time.stopReason == .timeLimit)
        #expect(time.verdict == .inconclusive)
        #expect(time.note?.hasPrefix("time limit reached after 31.0 s") == true)
        #expect(AdaptiveAnalysis(timeLimitSeconds: 30).decide(noisy, elapsedSeconds: 29).stopReason == nil)
        // Rounds with nothing measured are counted for the budget but not in the test.
        let empty = AdaptiveAnalysis(maximumRounds: 3).decide([Self.round(0, 0), Self.round(.nan, 3), Self.round(1, 1)])
        #expect(empty.rounds == 1)
        #expect(empty.stopReason == .budget)
    }

    /// Skype's published control is 464 bytes shorter than its original (706 768 against 707 232). At the same
    /// rate, whole-replay rates (bytes over each replay's own duration, with a fixed start-up cost) make the
    /// control look faster; over the same bytes the two are equal.
    @Test func ratesOverEqualBytes() throws {
        // 8 Mbit/s after a 0.2 s start with nothing received; samples every 0.1 s.
        func samples(total: Int) -> (mbps: [Double], times: [Double]) {
            var mbps: [Double] = [0, 0]
            var times: [Double] = [0.1, 0.2]
            var received = 0.0
            while received < Double(total) {
                let step = min(100_000, Double(total) - received)
                received += step
                times.append(times.last! + step / 100_000 * 0.1)
                mbps.append(8)
            }
            return (mbps, times)
        }
        let original = samples(total: 707_232)
        let control = samples(total: 706_768)
        let rates = try #require(AdaptiveAnalysis.equalByteRates(original: original, control: control))
        #expect(rates.comparedBytes == 706_768)
        #expect(abs(rates.originalMbps - rates.controlMbps) < 1e-9)
        #expect(abs(rates.originalMbps - 8 * 0.706_768 / (0.2 + 0.706_768)) < 1e-9)
        let wholeOriginal = 8 * 0.707_232 / original.times.last!
        let wholeControl = 8 * 0.706_768 / control.times.last!
        #expect(wholeControl != wholeOriginal)
        #expect(AdaptiveAnalysis.equalByteRates(original: original, control: ([0, 0], [0.1, 0.2])) == nil)
    }

    /// A round that crosses the path within four sample intervals: counted to the end of the interval of its last
    /// bytes, a replay whose last bytes came just after 0.3 s and one whose last bytes came just before 0.4 s took
    /// the same time; the instant of the last bytes tells them apart.
    @Test func lastArrivalEndsTheLastInterval() throws {
        let times = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
        // Megabytes per interval as Mbit/s over 0.1 s; both 1 MB in total, the first with two empty intervals after.
        let early = (mbps: [0.3, 0.3, 0.3, 0.1, 0, 0].map { $0 * 80 }, times: times)
        let late = (mbps: [0.25, 0.25, 0.25, 0.25].map { $0 * 80 }, times: Array(times.prefix(4)))
        let stepped = try #require(AdaptiveAnalysis.equalByteRates(original: early, control: late))
        #expect(abs(stepped.originalMbps - stepped.controlMbps) < 1e-9)
        #expect(abs(stepped.originalMbps - 8 / 0.4) < 1e-9)

        let timed = try #require(
            AdaptiveAnalysis.equalByteRates(original: early, control: late, lastArrivals: (0.305, 0.399)))
        #expect(timed.comparedBytes == 1_000_000)
        #expect(abs(timed.originalMbps - 8 / 0.305) < 1e-9)
        #expect(abs(timed.controlMbps - 8 / 0.399) < 1e-9)

        // The control received more (1.3 MB, its last bytes at 0.35 s): `B` is the original's 1 MB, which the
        // control reached a quarter into its last interval, now 0.3-0.35 s: interpolated over that, not over 0.3-0.4.
        let more = (mbps: [0.3, 0.3, 0.3, 0.4].map { $0 * 80 }, times: Array(times.prefix(4)))
        let partly = try #require(
            AdaptiveAnalysis.equalByteRates(original: early, control: more, lastArrivals: (0.305, 0.35)))
        #expect(abs(partly.controlMbps - 8 / 0.3125) < 1e-9)

        // An instant outside the interval that received the last bytes (not a meter's own) changes nothing.
        let ignored = try #require(
            AdaptiveAnalysis.equalByteRates(original: early, control: late, lastArrivals: (0.55, 0.2)))
        #expect(abs(ignored.originalMbps - stepped.originalMbps) < 1e-9)
        #expect(abs(ignored.controlMbps - stepped.controlMbps) < 1e-9)
    }
}
