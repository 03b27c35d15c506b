import Foundation
import WeheAnalysis
public import WeheCore
import WeheReplay

/// The interleaved mode: the published test, then more rounds of the same two replays, each round's
/// order chosen by a fair coin, and the sensitive verdict (`SensitiveAnalysis`) from every round.
///
/// Each extra round is an ordinary published test on the wire (a new history count, the original with testID 0 and
/// the bit-inverted control with testID 1, the last replay marked end of test), so any Wehe server serves it and
/// analyses it if asked; the client asks for no analysis of the extra rounds and does not store them in its history.
/// The published verdict and numbers are those of the first test, unchanged.
extension ReplayClient {
    /// Runs `test` (with its confirmation, as `run`), then `rounds − 1` further rounds, and attaches the sensitive
    /// summary. With `rounds` ≤ 1 it is `run` plus the (inconclusive) one-round summary.
    /// - Throws: `ReplayClientError` as `run`; an extra round's failure fails the whole call.
    public func runInterleaved(
        _ test: Test,
        rounds: Int,
        onEvent: @escaping @Sendable (ReplayClientEvent) -> Void = { _ in }
    ) async throws(ReplayClientError) -> TestResult {
        let clock = ContinuousClock()
        let started = clock.now
        var result = try await run(test, onEvent: onEvent)
        var originals: [Double] = []
        var controls: [Double] = []
        var changeRounds: [ChangePointAnalysis.Round] = []
        var bytes = result.bytesReceived
        var cutShort = [result.original, result.control].compactMap { $0 }.filter(\.reachedDeadline).count
        if let original = result.original, let control = result.control {
            originals.append(Self.serverMean(original.samples))
            controls.append(Self.serverMean(control.samples))
            changeRounds.append(ChangePointAnalysis.Round(original: original.samples, control: control.samples))
        }
        if rounds > 1, !test.entry.isPortTest || result.verdict != .blocked {
            let address = try resolveServer()
            let tls = try makeTLS()
            for round in 2...rounds {
                onEvent(.roundStarted(test: test.entry.id, round: round, rounds: rounds))
                let historyCount: Int
                do {
                    historyCount = try await configuration.historyCounter.next()
                } catch {
                    throw ReplayClientError(.storeFailed, "cannot get the next test number: \(error)")
                }
                let order: [ReplayRole] = Bool.random() ? [.original, .control] : [.control, .original]
                var means: [ReplayRole: Double] = [:]
                var series: [ReplayRole: ThroughputSeries] = [:]
                for (offset, role) in order.enumerated() {
                    let trace = role == .original ? test.original : test.control
                    onEvent(
                        .replayStarted(test: test.entry.id, role: role, replayName: trace.name, position: offset + 1))
                    let outcome: ReplaySession.Outcome
                    do {
                        outcome = try await replaySession(
                            trace, role: role, historyCount: historyCount, endOfTest: offset == order.count - 1,
                            appDuration: test.entry.durationSeconds, address: address, tls: tls,
                            onProgress: { onEvent(.replayProgress(test: test.entry.id, role: role, progress: $0)) })
                    } catch  where Task.isCancelled {
                        throw ReplayClientError(.cancelled, "the test was cancelled")
                    }
                    onEvent(.replayFinished(test: test.entry.id, role: role, outcome: outcome.outcome))
                    means[role] = Self.serverMean(outcome.outcome.samples)
                    series[role] = outcome.outcome.samples
                    bytes += outcome.outcome.bytesReceived
                    if outcome.outcome.reachedDeadline { cutShort += 1 }
                }
                originals.append(means[.original] ?? 0)
                controls.append(means[.control] ?? 0)
                if let original = series[.original], let control = series[.control] {
                    changeRounds.append(ChangePointAnalysis.Round(original: original, control: control))
                }
            }
        }
        var sensitive = SensitiveAnalysis().summary(originalMeans: originals, controlMeans: controls)
        sensitive.durationSeconds = started.duration(to: clock.now).inSeconds
        if cutShort > 0 {
            // A replay stopped by the time limit is judged on what it covered (its mean is over
            // the covered time), and the summary says so.
            let remark =
                "\(cutShort) of \(2 * max(rounds, 1)) replays reached the time limit; each is judged on the part it covered"
            sensitive.note = sensitive.note.map { $0 + "; " + remark } ?? remark
        }
        sensitive.bytesReceived = bytes
        // A throttle that starts or stops during the replay, from the same rounds' samples.
        sensitive.changePoint = ChangePointAnalysis().summary(rounds: changeRounds)
        result.sensitive = sensitive
        if rounds > 1 {
            // The published test was stored when it finished; its record now gains the sensitive verdict.
            try await store(result)
        }
        return result
    }

    /// A replay's mean as the server computes it: zeros included, the last (partial) sample dropped; a replay with a
    /// single sample keeps it.
    static func serverMean(_ samples: ThroughputSeries) -> Double {
        samples.droppingLastSample().meanMbps ?? samples.meanMbps ?? 0
    }
}

extension TestResult {
    /// The sensitive summary: the interleaved one, or else the one round this test measured (inconclusive: one
    /// round cannot tell a throttle from a busy link; `runInterleaved` runs more).
    public var sensitiveSummary: SensitiveSummary {
        if let sensitive { return sensitive }
        guard let original, let control else {
            return SensitiveAnalysis().summary(originalMeans: [], controlMeans: [])
        }
        var summary = SensitiveAnalysis().summary(
            originalMeans: [ReplayClient.serverMean(original.samples)],
            controlMeans: [ReplayClient.serverMean(control.samples)])
        summary.durationSeconds = durationSeconds
        summary.bytesReceived = bytesReceived
        summary.changePoint = ChangePointAnalysis().summary(rounds: [
            ChangePointAnalysis.Round(original: original.samples, control: control.samples)
        ])
        return summary
    }
}
