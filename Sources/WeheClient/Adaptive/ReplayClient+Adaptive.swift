import Foundation
import NIOSSL
import WeheAnalysis
import WeheCore
import WeheReplay

/// The adaptive verdict: short randomized rounds until the evidence suffices (`AdaptiveAnalysis`), cut as
/// `AdaptivePlan` says.
///
/// On the wire every round is an ordinary Wehe test: a new history count, the original (testID 0) and the
/// bit-inverted control (testID 1) over their own side channels in an order drawn by a fair coin, the last one marked
/// end of test, each replay ending early as a client at its time limit ends it. Any Wehe server serves the rounds; the
/// client asks for no analysis of them (a server that analyses every test by itself, as ours does, stores a published
/// verdict per round that nobody reads) and stores one result locally: the adaptive verdict, keyed by the first
/// round's history count, with the largest round's samples.
extension ReplayClient {
    /// Runs `test` as an adaptive verdict.
    /// - Parameters:
    ///   - test: the test.
    ///   - plan: the rounds' cuts and caps (`AdaptivePlan(test:)` by default).
    ///   - fallBack: when the server cannot serve a round (it refuses the shortened replay or its samples), run the
    ///     published test instead and say so in the result's note; otherwise that failure is thrown.
    ///   - onEvent: progress, called from any thread; keep it short.
    /// - Returns: the result, whose verdict is the adaptive one (`sensitive.stopReason` set), or the published test's
    ///   after a fall-back.
    /// - Throws: `ReplayClientError`; nothing is stored then.
    public func runAdaptive(
        _ test: Test,
        plan: AdaptivePlan? = nil,
        fallBack: Bool = true,
        onEvent: @escaping @Sendable (ReplayClientEvent) -> Void = { _ in }
    ) async throws(ReplayClientError) -> TestResult {
        var plan = plan ?? AdaptivePlan(test: test)
        let clock = ContinuousClock()
        let started = clock.now
        let startedAt = Date()
        let address = try resolveServer()
        let tls = try makeTLS()
        // Every round's replays declare the same public address: it is discovered once per port for the test.
        let publicAddresses = PublicAddressCache()
        // Each replay opens the next one's side channel while it runs; the one the last round opened is closed
        // unused when the run ends, whichever way.
        let ahead = SideChannelAhead()
        defer { ahead.discard() }
        var monitor = AdaptiveAnalysis.Monitor(plan.rule)
        var floorDone = plan.shortRound == plan.floorRound
        var firstHistoryCount: Int?
        var largest: (original: ReplayOutcome, control: ReplayOutcome)?
        var received = 0
        var moved = 0
        var cutShort = 0
        var stop: AdaptiveStopReason?
        var note: String?
        var round = 0
        // Replays whose samples the server would not store (it saw too short a replay): measured all the same.
        var refusedSamples = 0
        var lastRefusal: String?
        // The long round's difference from its control, when past twice the margin (see below).
        var longRoundDifference: (percent: Int, slower: Bool)?
        // The short rounds' bytes, for what one more costs on this path (the long round would inflate the average).
        var shortRoundsMoved = 0
        var shortRounds = 0
        // The largest short round so far: what the next one may cost, for the stops that keep a run under one
        // published test's bytes (an average would let a larger round than most pass the mark).
        var largestShortRound = 0
        // After a long round that differed from its control by more than twice the margin while the short rounds
        // were alike: long rounds only, to confirm or refute a throttle that starts later in a flow, for as long as
        // the cap leaves room for the fewest rounds that could confirm it (`confirmsLongRound`).
        var confirmingLongRound = false
        // Those rounds' cut (`confirmingCut`) and what one is expected to move.
        var confirmingCut = plan.floorRound
        var confirmingRoundBytes = plan.floorRoundBytes
        var confirmingRoundSeconds = 0.0
        // The long rounds run, the first included.
        var longRounds = 0
        // The bytes and seconds of the largest and the longest confirming round so far: what the next one may cost.
        var largestConfirmingRound = 0
        var longestConfirmingRound = 0.0
        while stop == nil {
            // The rule would conclude "no differentiation": not before a round has carried the floor of bytes.
            var cut = plan.shortRound
            // The next round is the long one because the rounds so far say it may well conclude.
            var concludingLongRound = false
            let pending = monitor.stop(elapsedSeconds: started.duration(to: clock.now).inSeconds)
            if confirmingLongRound, let longRound = longRoundDifference,
                pending.reason == nil || pending.reason == .equivalence
            {
                // Another long round, while the rounds that could still confirm the difference fit under the cap;
                // once they do not, no round this run can afford decides, and it stops without a verdict.
                let needed = monitor.fewestRoundsToDifferentiate(
                    slower: longRound.slower, within: plan.rule.maximumRounds)
                guard
                    Self.confirmsLongRound(
                        fewestRounds: needed, perRound: max(confirmingRoundBytes, largestConfirmingRound),
                        moved: moved, maximumBytes: plan.maximumBytes,
                        perRoundSeconds: max(confirmingRoundSeconds, longestConfirmingRound),
                        elapsedSeconds: started.duration(to: clock.now).inSeconds,
                        timeLimitSeconds: plan.timeLimitSeconds)
                else {
                    stop = .longRoundDiffers
                    note =
                        "the short rounds were alike, but in the first long round the app was \(longRound.percent) % "
                        + (longRound.slower ? "slower" : "faster") + " than its control; after \(longRounds) long "
                        + "rounds "
                        + (needed.map {
                            "the \($0) more that could still confirm it would pass the cap of "
                                + AdaptivePlan.megabytes(plan.maximumBytes) + " or of \(Int(plan.timeLimitSeconds)) s"
                        } ?? "no number of long rounds could confirm it")
                        + "; the published test (--published) or --interleaved measures whole replays"
                    break
                }
                cut = confirmingCut
                concludingLongRound = true
            } else if pending.reason == .equivalence {
                if floorDone, let longRound = longRoundDifference {
                    // The short rounds are alike, the long round was not: a difference that starts later in a
                    // flow, which one long round cannot establish; no verdict.
                    stop = .longRoundDiffers
                    note =
                        "the short rounds were alike, but in the long round the app was \(longRound.percent) % "
                        + (longRound.slower ? "slower" : "faster")
                        + " than its control: a difference that starts later in a flow, which one long round cannot "
                        + "confirm; the published test (--published) or --interleaved measures whole replays"
                    break
                }
                if floorDone {
                    stop = .equivalence
                    break
                }
                if moved + plan.floorRoundBytes > plan.maximumBytes {
                    stop = .budget
                    note =
                        "the slowdown is inside ±\(Int((plan.rule.margin * 100).rounded())) % after short rounds, "
                        + "but the long round that rules out a throttle starting later would pass the cap of "
                        + AdaptivePlan.megabytes(plan.maximumBytes)
                    break
                }
                cut = plan.floorRound
                concludingLongRound = true
            } else if let reason = pending.reason {
                stop = reason
                note = pending.note
                break
            } else if !floorDone, monitor.equivalenceNeedsOneAgreeingRound,
                moved + plan.floorRoundBytes <= plan.maximumBytes
            {
                // One more round that agrees would conclude "no differentiation", which needs the long round
                // anyway: the long round is that round, instead of one more short round before it. When it does not
                // agree closely enough, short rounds follow until the rule decides.
                cut = plan.floorRound
                concludingLongRound = true
            } else if !floorDone, round > 0,
                moved + max(plan.shortRoundBytes, moved / round) + plan.floorRoundBytes > plan.maximumBytes,
                moved + plan.floorRoundBytes <= plan.maximumBytes
            {
                // The floor round now, while it still fits: "no differentiation" needs it whenever it comes, and
                // after one more short round it would no longer fit under the cap (a noisy path needs more short
                // rounds than the plan's). Which round comes next depends only on the rounds so far, so the
                // coin's null is untouched.
                cut = plan.floorRound
            }
            // A round that would pass the cap is not started: the rounds so far say what one costs on this path
            // (more than the cut when responses already in flight arrive unread).
            let expected =
                confirmingLongRound
                ? max(confirmingRoundBytes, largestConfirmingRound)
                : max(
                    cut == plan.floorRound ? plan.floorRoundBytes : plan.shortRoundBytes,
                    round > 0 ? moved / round : 0, cut == plan.floorRound ? 0 : largestShortRound)
            // The long round past one published test's bytes only on a path whose short rounds mostly agree. It
            // can conclude "no differentiation" only by agreeing with its control within ±10 % (twice the margin);
            // where a fifth of the short rounds or more already differed by more than that (cross traffic coming and
            // going, loss that stalls a replay now and then), one long round meets the same swings. A stop keeps
            // every error bound; it costs only verdicts a long round on a noisy path would have bought.
            if cut == plan.floorRound, !floorDone, plan.shortRound != plan.floorRound,
                Self.holdsBackLongRound(
                    differing: monitor.roundsDiffering(byMoreThan: 2 * plan.rule.margin),
                    rounds: monitor.differences.count, bytesAfterIt: moved + expected,
                    publishedBytes: plan.publishedBytes)
            {
                stop = .noisyPath
                note =
                    "stopped at \(AdaptivePlan.megabytes(moved)) (the published test moves "
                    + "\(AdaptivePlan.megabytes(plan.publishedBytes))): the app's rate against its control's varied by "
                    + "about ±\(monitor.roundSpreadPercent) % from round to round (cross traffic or a busy path): "
                    + "\(monitor.roundsDiffering(byMoreThan: 2 * plan.rule.margin)) of \(monitor.differences.count) "
                    + "rounds differed by more than the ±\(Int((200 * plan.rule.margin).rounded())) % within which the "
                    + "long round that could conclude \"no differentiation\" must agree; on such a path one long round "
                    + "settles nothing, and it would take the test past the published test's bytes; a test when the line "
                    + "is quieter may decide" + (pending.note.map { " (\($0))" } ?? "")
                break
            }
            // One published test's bytes is what a user expects a test to cost: past it, a round is started only
            // when the rounds so far forecast a verdict within the cap (`forecastRoundsToDecide`). On a path whose
            // cross traffic moves every round by tens of percent the rule would otherwise spend up to the cap and
            // end inconclusive all the same. Any stop keeps the rule's error bounds.
            if shortRounds >= Self.fewestRoundsBeforeForecast, !concludingLongRound,
                moved + expected > plan.publishedBytes
            {
                let perRound = max(plan.shortRoundBytes, shortRoundsMoved / max(1, shortRounds))
                let room = plan.maximumBytes - moved - (floorDone ? 0 : plan.floorRoundBytes)
                let affordable = max(0, room) / max(1, perRound) + (floorDone ? 0 : 1)
                if monitor.forecastRoundsToDecide(within: Self.forecastHorizonFactor * affordable) == nil {
                    stop = .noisyPath
                    note =
                        "stopped at \(AdaptivePlan.megabytes(moved)) (the published test moves "
                        + "\(AdaptivePlan.megabytes(plan.publishedBytes))): the app's rate against its control's varied by "
                        + "about ±\(monitor.roundSpreadPercent) % from round to round (cross traffic or a busy path), "
                        + "and at that rate no verdict is in sight within the cap of "
                        + "\(AdaptivePlan.megabytes(plan.maximumBytes)); a test when the line is quieter may decide"
                        + (pending.note.map { " (\($0))" } ?? "")
                    break
                }
            }
            if round > 0, moved + expected > plan.maximumBytes {
                stop = .budget
                note =
                    "another round would pass the cap of \(AdaptivePlan.megabytes(plan.maximumBytes)) "
                    + "(\(AdaptivePlan.megabytes(moved)) so far): " + (pending.note ?? "")
                break
            }
            round += 1
            let historyCount: Int
            do {
                historyCount = try await configuration.historyCounter.next()
            } catch {
                throw ReplayClientError(.storeFailed, "cannot get the next test number: \(error)")
            }
            if firstHistoryCount == nil { firstHistoryCount = historyCount }
            onEvent(.testStarted(test: test.entry.id, historyCount: historyCount, isConfirmation: false))
            let roundStarted = clock.now
            // A long round: the floor round, or one that confirms it.
            let isLongRound = (cut == plan.floorRound || confirmingLongRound) && plan.shortRound != plan.floorRound
            let outcomes: [ReplayRole: ReplayOutcome]
            var servedSlices = 0
            do {
                let measured = try await adaptiveRound(
                    test, cut: cut, isLongRound: isLongRound, historyCount: historyCount, address: address, tls: tls,
                    publicAddresses: publicAddresses, ahead: ahead, onEvent: onEvent)
                outcomes = measured.outcomes
                servedSlices = measured.servedSlices
                refusedSamples += measured.refusals.count
                if lastRefusal == nil { lastRefusal = measured.refusals.first }
            } catch let error
                where round == 1 && cut.isSlice && plan.unslicedShortRound != nil
                && (Self.serverCannotServeRounds(error) || error.denial == .changeSpecRefused)
            {
                // A server that would not take the slice's change spec (the published server reads the packet
                // number −1 as "no change", so this is for one that refuses it or fails on it): the rounds are the
                // call's first seconds, from the first round again.
                ahead.discard()
                plan.dropSlices()
                round = 0
                firstHistoryCount = nil
                continue
            } catch let error where fallBack && round == 1 && Self.serverCannotServeRounds(error) {
                // Nothing measured yet: the published test, said as such.
                ahead.discard()
                var result = try await run(test, onEvent: onEvent)
                let remark =
                    "the server could not serve the adaptive verdict's short rounds (\(error.message)); "
                    + "this is the published test"
                result.summary.note = result.summary.note.map { $0 + "; " + remark } ?? remark
                try await store(result)
                return result
            }
            guard let original = outcomes[.original], let control = outcomes[.control] else {
                throw ReplayClientError(.protocolViolation, "a round ended without both replays")
            }
            if case .slice = cut, servedSlices < 2 {
                // A server that does not serve slices (the published one) served both replays whole, and the client
                // replayed their first seconds: a round of the call's opening like any other, and the rounds after it
                // are cut so. One that served one replay a slice and the other not (restarted between them) measured
                // two different things, which no round may compare.
                guard servedSlices == 0 else {
                    throw ReplayClientError(
                        .protocolViolation, "the server served the slice to one replay of a round only")
                }
                plan.dropSlices()
            }
            if cut == plan.floorRound { floorDone = true }
            if isLongRound { longRounds += 1 }
            received += original.bytesReceived + control.bytesReceived
            let roundBytes = original.bytesSent + original.bytesReceived + control.bytesSent + control.bytesReceived
            moved += roundBytes
            if !isLongRound {
                shortRoundsMoved += roundBytes
                shortRounds += 1
                largestShortRound = max(largestShortRound, roundBytes)
            } else if confirmingLongRound {
                largestConfirmingRound = max(largestConfirmingRound, roundBytes)
                longestConfirmingRound = max(longestConfirmingRound, roundStarted.duration(to: clock.now).inSeconds)
            }
            cutShort += [original, control].filter(\.reachedDeadline).count
            if largest.map({ $0.original.bytesReceived + $0.control.bytesReceived }) ?? -1
                < original.bytesReceived + control.bytesReceived
            {
                largest = (original, control)
            }
            let rates = Self.roundRates(original: original, control: control)
            // The long round must agree with the short ones: a throttle that starts after some megabytes of a flow
            // shows only here, and one round among many short ones would not move the rule. Short rounds do not
            // speak for the part of the flow they never reached, so a long round that differs by more than twice
            // the margin forbids "no differentiation" (the run ends without a verdict when the short rounds would
            // conclude it); differentiation, from the short rounds or tipped by this round, stays possible. Only the
            // first long round counts here: the rounds that confirm it (which may be cut as it was) are judged by
            // the rule, and the direction they set out to confirm stays the first one's.
            if cut == plan.floorRound, plan.shortRound != plan.floorRound, !confirmingLongRound,
                let difference = AdaptiveAnalysis.logRatio(
                    .init(
                        originalMbps: rates.originalMbps, controlMbps: rates.controlMbps, comparedBytes: 0,
                        totalBytes: 0, durationSeconds: 0)),
                abs(difference) > log(1 + 2 * plan.rule.margin)
            {
                longRoundDifference = (Int((abs(1 - exp(difference)) * 100).rounded()), difference < 0)
            }
            monitor.add(
                AdaptiveAnalysis.Round(
                    originalMbps: rates.originalMbps, controlMbps: rates.controlMbps,
                    comparedBytes: rates.comparedBytes, totalBytes: roundBytes,
                    durationSeconds: roundStarted.duration(to: clock.now).inSeconds),
                elapsedSeconds: started.duration(to: clock.now).inSeconds)
            let now = monitor.stop(elapsedSeconds: started.duration(to: clock.now).inSeconds)
            if !confirmingLongRound, longRounds == 1, cut == plan.floorRound, let longRound = longRoundDifference,
                now.reason == nil || now.reason == .equivalence
            {
                // The confirming rounds are cut just past where this round's samples put the change; each moves
                // what this round moved beyond its cut on top of its own cut (responses in flight when a replay
                // ends).
                let lateCut = Self.confirmingCut(
                    original: original.samples, control: control.samples, slower: longRound.slower, plan: plan)
                let lateBytes =
                    AdaptivePlan.expectedBytes(of: lateCut, in: plan) + max(0, roundBytes - plan.floorRoundBytes)
                // Its time in proportion to its bytes: an app whose trace paces its bytes (Netflix's segments come
                // at their recorded times) spends seconds, not bytes, and there the time cap decides.
                let lateSeconds =
                    roundStarted.duration(to: clock.now).inSeconds * Double(lateBytes) / Double(max(1, roundBytes))
                confirmingLongRound = Self.confirmsLongRound(
                    fewestRounds: monitor.fewestRoundsToDifferentiate(
                        slower: longRound.slower, within: plan.rule.maximumRounds),
                    perRound: lateBytes, moved: moved, maximumBytes: plan.maximumBytes, perRoundSeconds: lateSeconds,
                    elapsedSeconds: started.duration(to: clock.now).inSeconds, timeLimitSeconds: plan.timeLimitSeconds)
                if confirmingLongRound {
                    confirmingCut = lateCut
                    confirmingRoundBytes = lateBytes
                    confirmingRoundSeconds = lateSeconds
                }
            }
            let status: String =
                switch now.reason {
                case _ where confirmingLongRound && now.reason != .differentiation:
                    "a long round differed from its control: long rounds to confirm it"
                case .differentiation?: "the evidence suffices: differentiation"
                case .equivalence? where floorDone && longRoundDifference != nil:
                    "the short rounds are alike, the long round was not: no verdict"
                case .equivalence? where floorDone: "the evidence suffices: no differentiation"
                case .equivalence?:
                    "the slowdown is small after short rounds; one long round to rule out a late throttle"
                case .budget?, .timeLimit?, .longRoundDiffers?, .noisyPath?: now.note ?? "the cap is reached"
                case nil: now.note ?? "another round"
                }
            let decisionSoFar = monitor.decision(elapsedSeconds: started.duration(to: clock.now).inSeconds)
            onEvent(
                .roundFinished(
                    test: test.entry.id,
                    round: AdaptiveRoundProgress(
                        round: round, isFloorRound: isLongRound,
                        bytesMoved: moved, maximumBytes: plan.maximumBytes, slowdown: decisionSoFar.slowdown,
                        status: status)))
        }
        let elapsed = started.duration(to: clock.now).inSeconds
        let decision = monitor.decision(elapsedSeconds: elapsed)
        // The verdict follows this run's stop, not the rule's answer alone: a run stopped for the budget while the
        // rule would call equivalence (the long round did not fit) is inconclusive.
        let verdict: Verdict =
            switch stop {
            case .differentiation?: .differentiation
            case .equivalence?: .noDifferentiation
            case .budget?, .timeLimit?, .longRoundDiffers?, .noisyPath?, nil: .inconclusive
            }
        var sensitive = SensitiveSummary(
            verdict: verdict,
            direction: stop == .differentiation ? decision.direction : nil,
            rounds: decision.rounds,
            pValue: min(1, 2 / max(decision.wealthThrottled, decision.wealthPrioritized, 1)),
            alpha: plan.rule.alpha, slowdown: decision.slowdown, slowdownLower: decision.slowdownLower,
            slowdownUpper: decision.slowdownUpper, confidenceLevel: decision.confidenceLevel,
            originalMeansMbps: monitor.rounds.map(\.originalMbps), controlMeansMbps: monitor.rounds.map(\.controlMbps),
            note: [
                note ?? (stop == .budget || stop == .timeLimit ? decision.note : nil),
                confirmingLongRound && stop == .differentiation
                    ? "found in long rounds after the short rounds were alike: a throttle that starts later in a flow "
                        + "(\(longRounds) long rounds, then of \(confirmingCut))" : nil,
                stop != .longRoundDiffers && !(confirmingLongRound && stop == .differentiation)
                    ? longRoundDifference.map {
                        "in the long round the app was \($0.percent) % \($0.slower ? "slower" : "faster") than its control"
                    } : nil,
                cutShort > 0
                    ? "\(cutShort) replays reached the time limit; each is judged on the bytes it covered"
                    : nil,
                refusedSamples > 0
                    ? "the server did not store the samples of \(refusedSamples) replays (\(lastRefusal ?? "")); "
                        + "the client measured them all the same" : nil,
            ].compactMap { $0 }.joined(separator: "; ").nilIfEmpty)
        sensitive.stopReason = stop
        sensitive.durationSeconds = elapsed
        sensitive.bytesReceived = received
        sensitive.bytesMoved = moved
        let originalMean = Self.mean(monitor.rounds.map(\.originalMbps))
        let controlMean = Self.mean(monitor.rounds.map(\.controlMbps))
        let summary = AnalysisSummary(
            areaTest: -1, ks2RatioTest: -1, originalMeanMbps: originalMean, controlMeanMbps: controlMean,
            ksStatistic: -1, ksPValue: -1, verdict: sensitive.verdict, direction: sensitive.direction,
            thresholds: configuration.verdictRules.appliedThresholds(
                originalMeanMbps: originalMean, controlMeanMbps: controlMean),
            note: "adaptive verdict: \(decision.rounds) rounds, \(AdaptivePlan.megabytes(moved)), "
                + "stopped for \(stop?.rawValue ?? "budget")")
        let result = TestResult(
            test: test.entry.id, name: test.entry.name, replayName: test.original.name,
            controlReplayName: test.control.name, isPortTest: test.entry.isPortTest, userID: configuration.userID,
            historyCount: firstHistoryCount ?? 0, summary: summary,
            originalSamples: largest?.original.samples ?? ThroughputSeries(mbps: [], times: []),
            controlSamples: largest?.control.samples ?? ThroughputSeries(mbps: [], times: []),
            original: largest?.original, control: largest?.control, confirmed: false, firstVerdict: nil,
            durationSeconds: elapsed, bytesReceived: received, startedAt: startedAt, sensitive: sensitive)
        try await store(result)
        onEvent(.testFinished(result))
        return result
    }

    /// Failures that say the server will not serve shortened replays (it refused the replay or its samples), as
    /// opposed to a path or server that is down, which the published test would meet too.
    static func serverCannotServeRounds(_ error: ReplayClientError) -> Bool {
        error.code == .protocolViolation
    }

    static func mean(_ values: [Double]) -> Double {
        let finite = values.filter(\.isFinite)
        return finite.isEmpty ? 0 : finite.reduce(0, +) / Double(finite.count)
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
