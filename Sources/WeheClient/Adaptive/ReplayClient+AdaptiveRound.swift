import NIOSSL
import WeheAnalysis
import WeheCore
import WeheReplay

/// One round of the adaptive verdict: how its replays are cut, played in a coin-flipped order, and measured over
/// equal bytes.
extension ReplayClient {
    /// One round: both replays cut as `cut`, in an order drawn by a fair coin.
    func adaptiveRound(
        _ test: Test,
        cut: AdaptivePlan.Cut,
        isLongRound: Bool,
        historyCount: Int,
        address: String,
        tls: NIOSSLContext?,
        publicAddresses: PublicAddressCache? = nil,
        ahead: SideChannelAhead? = nil,
        onEvent: @escaping @Sendable (ReplayClientEvent) -> Void
    ) async throws(ReplayClientError) -> (
        outcomes: [ReplayRole: ReplayOutcome], refusals: [String], servedSlices: Int
    ) {
        let order: [ReplayRole] = Bool.random() ? [.original, .control] : [.control, .original]
        var outcomes: [ReplayRole: ReplayOutcome] = [:]
        var refusals: [String] = []
        var servedSlices = 0
        for (offset, role) in order.enumerated() {
            var trace = role == .original ? test.original : test.control
            var deadline: Duration?
            var appDuration: Double
            var slice: UDPSlice?
            switch cut {
            case .bytes(let bytes):
                // The trace's pauses past a quarter second are shortened to it: a paced video trace waits seconds
                // between its first segments for its buffer to drain (Amazon 2.1 s after its first 350 kB, Netflix
                // 5.5 s after its first 500 kB), which every round would otherwise pay twice, and which made its
                // rate over the round's bytes mostly that wait. Shorter waits, an app's own turn-taking (Pandora's
                // one wait is 0.08 s; Deezer's are at most 0.24 s, and its short rounds' 0.03 s), stay as recorded:
                // without any of them, Deezer's rounds measured their 25-ms transfers alone, and 3 of 20 unthrottled
                // runs concluded where 20 of 20 do with them.
                trace = trace.prefix(bytes: bytes).shorteningPauses(to: Self.longestRoundPause)
                // About 100 samples over the longer of the prefix's recorded time and its bytes at 20 Mbit/s (at
                // least 1 ms apart): on a slow path rarely past the 200 samples a server stores from a replay that
                // moved less than half its trace. A port test replays without its recorded timing, so its recorded
                // time (32 s for the 45 MB of port 80's large test) says nothing of how long a prefix takes. With it,
                // a 7-MB long round crossed a 100 Mbit/s path in 3 to 5 samples: no change point to cut the
                // confirming rounds at. A port test's long rounds are therefore sampled as if the bytes came at
                // 50 Mbit/s. Its short rounds keep the coarse samples: the rates over equal bytes end each replay at
                // its last bytes' arrival (`ThroughputMeter.lastArrival`), so how coarse the samples are no longer
                // moves a round's rate in steps of a whole interval.
                appDuration =
                    trace.isPortTest && isLongRound
                    ? max(Double(trace.bytesBothWays) * 8 / 50e6, 0.1)
                    : max(trace.duration, Double(trace.bytesBothWays) * 8 / 20e6, 0.1)
            case .seconds(let seconds):
                deadline = .milliseconds(Int64((seconds * 1000).rounded()))
                appDuration = seconds
            case .slice(let asked):
                // The slice's datagrams, and a quarter of a second for the last ones to arrive; a server that does
                // not serve slices sends the call's first seconds, which the same deadline cuts.
                slice = asked
                deadline = .milliseconds(Int64(((asked.length + Self.sliceTailSeconds) * 1000).rounded()))
                appDuration = asked.length
            }
            onEvent(.replayStarted(test: test.entry.id, role: role, replayName: trace.name, position: offset + 1))
            let outcome: ReplaySession.Outcome
            do {
                outcome = try await replaySession(
                    trace, role: role, historyCount: historyCount, endOfTest: offset == order.count - 1,
                    appDuration: appDuration, address: address, tls: tls, deadline: deadline,
                    keepsRefusedSamples: true, publicAddresses: publicAddresses, ahead: ahead, slice: slice,
                    onProgress: { onEvent(.replayProgress(test: test.entry.id, role: role, progress: $0)) })
            } catch  where Task.isCancelled {
                throw ReplayClientError(.cancelled, "the test was cancelled")
            }
            onEvent(.replayFinished(test: test.entry.id, role: role, outcome: outcome.outcome))
            outcomes[role] = outcome.outcome
            if let refusal = outcome.samplesRefused { refusals.append(refusal) }
            if outcome.servedSlice { servedSlices += 1 }
        }
        return (outcomes, refusals, servedSlices)
    }

    /// The longest wait a TCP round keeps from its trace, seconds (`ReplayTrace.shorteningPauses(to:)`).
    static let longestRoundPause = 0.25

    /// After a slice's last datagram, how long a round's replay waits for what is still on its way, seconds.
    static let sliceTailSeconds = 0.25

    /// The round's two rates over the same bytes; when one replay received nothing and the other did, its rate is 0
    /// against the other's mean (a blocked or starved replay is the strongest evidence there is).
    static func roundRates(original: ReplayOutcome, control: ReplayOutcome) -> (
        originalMbps: Double, controlMbps: Double, comparedBytes: Int
    ) {
        if let rates = AdaptiveAnalysis.equalByteRates(
            original: (original.samples.mbps, original.samples.times),
            control: (control.samples.mbps, control.samples.times),
            lastArrivals: (original.lastArrival?.inSeconds, control.lastArrival?.inSeconds))
        {
            return rates
        }
        return (
            original.bytesReceived > 0 ? original.samples.meanMbps ?? 0 : 0,
            control.bytesReceived > 0 ? control.samples.meanMbps ?? 0 : 0, 0
        )
    }
}
