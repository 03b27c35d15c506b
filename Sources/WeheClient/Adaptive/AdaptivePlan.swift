import WeheAnalysis
public import WeheCore
import WeheReplay

/// How an adaptive verdict cuts one test into rounds, and what it may cost: decided from the traces and the catalog
/// before the first byte moves, so that the cost can be said (and agreed to) up front.
///
/// **Short rounds.** A round replays the same prefix of the original and of the control. TCP rounds are cut in
/// bytes (`ReplayTrace.prefix(bytes:)`): a twentieth of the trace, at least 250 kB so that a round lasts several
/// sample intervals on a fast path and reaches the rate a cap would bite at, at most the whole trace. A TCP round
/// keeps the trace's waits up to a quarter second and shortens longer ones to that
/// (`ReplayClient.longestRoundPause`): a paced video trace's seconds of waiting for its buffer made every round
/// last seconds whatever its bytes. Traces under
/// 3 MB get a twelfth (at least 64 kB) instead of 250 kB: with 250 kB rounds, the eight rounds of an equivalence
/// and the floor round (the whole trace) would not fit under the cap, and every run on a calm path would end
/// inconclusive. UDP rounds are cut in time (the server sends its datagrams on its own schedule; the client ends the
/// replay at the round's deadline). A call of one flow is cut into slices (`UDPSlice`, `udpSlice(_:replaySeconds:)`):
/// its first quarter second, then the busiest stretch of a twentieth of its time (at least 1 s), which a server that
/// serves slices (ours) moves up to follow the opening. A call opens with a few datagrams and seconds of near silence
/// and reaches its full rate after a ramp (Skype: 112 bytes in its first second, then nothing until 2 s, its full
/// rate from about 4 s), so rounds of its first seconds never reached the rate a cap bites at. Against a server
/// that serves whole replays only (the published one), and for calls of several flows or an even stream, rounds are
/// the call's first seconds instead: until the client's datagrams reach a twentieth of their bytes, at least a
/// twentieth of the replay's time and 1 s (rounds of the first second carried only the opening and measured nothing
/// of the call). Twenty short rounds move the
/// bytes of one published test; the rule cannot stop for differentiation before 11 rounds at α = 0.01 (all of them
/// clearly one way), so a clear throttle costs about half a published test.
///
/// **Equivalence at 0.05.** A wrong "no differentiation" is a missed throttle, not an accusation: its level is
/// 0.05 (a miss at most 2.5 % of the time, inside the 95 % detection asked of the verdict), where the
/// false-positive level stays 0.01. Its wealths mix the stakes from 0.5 up (the differentiation test mixes them all):
/// rounds that agree, as they do without differentiation on a calm path, grow them faster. Identical rounds then
/// reach equivalence after 7 rounds instead of 11.
///
/// **Clipping.** Each round's log ratio counts fully from a 5 % difference on (`clipScale` 0.05, where the rule's
/// default is 0.1): a round that shows no difference then counts fully towards "inside the ±5 % margin", which
/// shortens an equivalence (at the rule's level 0.01, 11 rounds instead of 18 for identical replays, 16 instead of
/// 29 at a 2 % difference), and any clipping keeps the false-positive bound (the coin makes each clipped value's
/// sign fair).
///
/// **The floor round.** A throttle that starts after some megabytes (reported after about 7 MB on a real network)
/// cannot show in short prefixes. So "no differentiation" is never concluded from short rounds alone: when the rule
/// would stop for equivalence after one more round that agrees, that round carries `floorBytesPerFlow` per replay
/// (the whole trace when it is smaller; for UDP the whole replay), and the verdict is taken after it: the long round
/// is the last round of an equivalence, not one more after it (on a calm path 7 rounds of which the last is long,
/// where 7 short rounds and then the long one made 8). A differentiation stop needs no such round.
/// On a noisy path, where more short rounds are needed than planned, the floor round comes as soon as one more short
/// round would leave no room for it under the cap (before, such runs ended at the cap with the interval already
/// inside the margin).
///
/// **Confirming a long round that differed.** When the short rounds were alike and the long round was more than twice
/// the margin off its control (a throttle that starts later in a flow), the run goes on with long rounds only, each
/// cut half as far again as where the first long round's samples put the change (`ReplayClient.confirmingCut`), as
/// long as the fewest such rounds that could confirm it still fit under both caps
/// (`AdaptiveAnalysis.Monitor.fewestRoundsToDifferentiate`); otherwise it stops without a verdict
/// (`long-round-differs`), as it did before such rounds existed, once the short rounds would conclude.
///
/// **Caps.** Twice the bytes of the published test (original and control once) and twice its time (with a minute
/// of slack for connection set-up): past either the verdict is inconclusive, with the reason.
public struct AdaptivePlan: Sendable {
    /// How one round is cut.
    public enum Cut: Sendable, Hashable, CustomStringConvertible {
        /// TCP: the traces' first `bytes` bytes (uploads and responses).
        case bytes(Int)
        /// UDP: the replays' first `seconds`.
        case seconds(Double)
        /// UDP: the replays' opening, then a stretch from later in the call (`UDPSlice`), from a server that serves
        /// slices.
        case slice(UDPSlice)

        /// Whether the cut is a slice.
        public var isSlice: Bool {
            if case .slice = self { true } else { false }
        }

        public var description: String {
            switch self {
            case .bytes(let bytes): "the first \(AdaptivePlan.megabytes(bytes)) of each replay"
            case .seconds(let seconds): "the first \(Int(seconds.rounded())) s of each replay"
            case .slice(let slice): "\(slice) of each replay"
            }
        }
    }

    /// The short rounds' cut.
    public var shortRound: Cut
    /// The floor round's cut.
    public var floorRound: Cut
    /// Bytes one short round is expected to move (both replays, both directions).
    public var shortRoundBytes: Int
    /// The short rounds' cut against a server that does not serve slices, when `shortRound` is a slice: the
    /// replays' first seconds, with what such a round is expected to move.
    public var unslicedShortRound: (cut: Cut, bytes: Int)?
    /// Bytes the floor round is expected to move.
    public var floorRoundBytes: Int
    /// Bytes of the published test: original and control once, both directions.
    public var publishedBytes: Int
    /// Time of the published test's two replays on a path that keeps up with the trace, seconds.
    public var publishedSeconds: Double
    /// The stopping rule, with the caps of this test.
    var rule: AdaptiveAnalysis

    /// Per replay, the bytes the floor round carries at most (7 MB).
    public static let floorBytesPerFlow = 7_000_000
    /// Short rounds per published test's bytes.
    public static let shortRoundsPerTest = 20
    /// The smallest TCP round per replay (250 kB), for traces of at least 12 times that.
    public static let smallestRoundBytes = 250_000
    /// The smallest TCP round of a short trace (64 kB).
    public static let smallestShortTraceRoundBytes = 64_000
    /// The level of the equivalence stop.
    public static let equivalenceAlpha = 0.05
    /// The smallest stake of the equivalence wealths' mixture.
    public static let equivalenceLowestBet = 0.5
    /// The shortest UDP round (1 s).
    public static let shortestRoundSeconds = 1.0
    /// A UDP slice's opening, kept as recorded: what a classifier matches first and the server identifies the
    /// replay's flow by (Skype's and Teams' traces open with one STUN datagram, then nothing for two seconds).
    public static let sliceOpeningSeconds = 0.25
    /// How many times the bytes of the call's first seconds a slice must carry to be worth asking for.
    static let sliceGain = 1.25
    /// The clipping scale of the rounds' log ratios.
    public static let clipScale = 0.05

    /// The plan of `test`.
    /// - Parameters:
    ///   - test: the catalog entry and both traces.
    ///   - alpha: the false-positive bound (0.01).
    public init(test: ReplayClient.Test, alpha: Double = 0.01) {
        let original = test.original
        let isUDP = original.transport == .udp
        // One replay's bytes: the catalog's size when it gives one (the only source for UDP, whose server datagrams
        // the client file does not list), else what the client file says.
        let catalogBytes = test.entry.sizeMB.flatMap { $0.isFinite && $0 > 0 ? Int($0 * 1_000_000) : nil }
        let replayBytes = max(1, isUDP ? (catalogBytes ?? 2 * original.bytesUp) : original.bytesBothWays)
        let deadline = isUDP ? ReplayEngineConfiguration.udpAppDeadline : ReplayEngineConfiguration.tcpAppDeadline
        let replaySeconds = min(max(original.duration, test.entry.durationSeconds, 1), deadline.inSeconds)
        publishedBytes = 2 * replayBytes
        publishedSeconds = 2 * replaySeconds
        if isUDP {
            let short = Self.shortUDPRound(original, replaySeconds: replaySeconds)
            shortRound = .seconds(short.seconds)
            floorRound = .seconds(replaySeconds)
            shortRoundBytes = Int((Double(2 * replayBytes) * short.fraction).rounded(.up))
            floorRoundBytes = 2 * replayBytes
            if let slice = Self.udpSlice(original, replaySeconds: replaySeconds) {
                unslicedShortRound = (shortRound, shortRoundBytes)
                shortRound = .slice(slice.slice)
                shortRoundBytes = Int((Double(2 * replayBytes) * slice.fraction).rounded(.up))
            }
        } else {
            let short = Self.shortRoundBytes(replayBytes: replayBytes)
            let floor = min(replayBytes, Self.floorBytesPerFlow)
            shortRound = .bytes(short)
            floorRound = .bytes(floor)
            shortRoundBytes = 2 * short
            floorRoundBytes = 2 * floor
        }
        // The floor is this plan's (a round of `floorRound`), not the rule's: the rule's own floor counts the bytes
        // the comparison covered, which a throttled round never reaches.
        rule = AdaptiveAnalysis(
            alpha: alpha, equivalenceAlpha: max(alpha, Self.equivalenceAlpha), clipScale: Self.clipScale,
            minimumBytesPerFlow: 0, maximumRounds: 60,
            maximumBytes: 2 * publishedBytes,
            timeLimitSeconds: 2 * publishedSeconds + 60, equivalenceLowestBet: Self.equivalenceLowestBet)
    }

    /// A short UDP round's length: the recorded time (from the first datagram) by which the trace's datagrams reach
    /// a twentieth of their bytes, at least a twentieth of `replaySeconds` and `shortestRoundSeconds`, at most
    /// `replaySeconds`; with the fraction of the trace's bytes sent by then.
    static func shortUDPRound(_ trace: ReplayTrace, replaySeconds: Double) -> (seconds: Double, fraction: Double) {
        let packets = trace.packets.sorted { $0.timestamp < $1.timestamp }
        let total = packets.reduce(0) { $0 + $1.payload.count }
        let start = packets.first?.timestamp ?? 0
        var reached = 0.0
        if total > 0 {
            var sent = 0
            for packet in packets {
                sent += packet.payload.count
                if sent * shortRoundsPerTest >= total {
                    reached = packet.timestamp - start
                    break
                }
            }
        }
        let seconds = min(
            replaySeconds,
            max(shortestRoundSeconds, replaySeconds / Double(shortRoundsPerTest), reached.isFinite ? reached : 0))
        guard total > 0 else { return (seconds, min(1, seconds / max(replaySeconds, 1e-9))) }
        let within = packets.reduce(0) { $0 + ($1.timestamp - start <= seconds ? $1.payload.count : 0) }
        return (seconds, Double(within) / Double(total))
    }

    /// A short UDP round's slice of a one-flow trace: the first `sliceOpeningSeconds`, then the stretch of
    /// `replaySeconds / 20` (at least `shortestRoundSeconds`) in which the trace's datagrams carry the most bytes, with
    /// the fraction of the trace's bytes the slice carries. `nil` for a trace of several flows, one too short to hold
    /// a stretch after its opening, or one whose slice would carry less than `sliceGain` times the bytes of its first
    /// seconds of the same length (an even stream: those are then as good a round, and any server serves them).
    static func udpSlice(_ trace: ReplayTrace, replaySeconds: Double) -> (slice: UDPSlice, fraction: Double)? {
        guard trace.transport == .udp, trace.flows.count == 1 else { return nil }
        let packets = trace.packets.sorted { $0.timestamp < $1.timestamp }
        guard let start = packets.first?.timestamp else { return nil }
        let offsets = packets.map { $0.timestamp - start }
        let total = packets.reduce(0) { $0 + $1.payload.count }
        let length = max(shortestRoundSeconds, replaySeconds / Double(shortRoundsPerTest))
        guard total > 0, let last = offsets.last, last >= sliceOpeningSeconds + length else { return nil }
        // The busiest stretch: two pointers over the datagrams, each stretch starting at a datagram's time.
        var best: (from: Double, bytes: Int)?
        var end = 0
        var inside = 0
        for (index, from) in offsets.enumerated() where from >= sliceOpeningSeconds {
            if from + length > last + 1e-9 { break }
            end = max(end, index)
            while end < packets.count, offsets[end] < from + length {
                inside += packets[end].payload.count
                end += 1
            }
            if best.map({ inside > $0.bytes }) ?? true { best = (from, inside) }
            inside -= packets[index].payload.count
        }
        let opening = zip(offsets, packets).reduce(0) { $0 + ($1.0 < sliceOpeningSeconds ? $1.1.payload.count : 0) }
        let firstSeconds = zip(offsets, packets).reduce(0) {
            $0 + ($1.0 < sliceOpeningSeconds + length ? $1.1.payload.count : 0)
        }
        guard let best, Double(opening + best.bytes) > sliceGain * Double(firstSeconds),
            let slice = UDPSlice(openingSeconds: sliceOpeningSeconds, from: best.from, seconds: length)
        else { return nil }
        return (slice, min(1, Double(opening + best.bytes) / Double(total)))
    }

    /// The short rounds' cut against a server that turned out not to serve slices.
    mutating func dropSlices() {
        guard let unsliced = unslicedShortRound else { return }
        shortRound = unsliced.cut
        shortRoundBytes = unsliced.bytes
        unslicedShortRound = nil
    }

    /// One replay's bytes in a short TCP round: a twentieth of the trace, at least 250 kB, or for traces under
    /// 3 MB a twelfth of it (at least 64 kB); never more than the trace.
    public static func shortRoundBytes(replayBytes: Int) -> Int {
        let smallest = min(smallestRoundBytes, max(smallestShortTraceRoundBytes, replayBytes / 12))
        return min(replayBytes, max(smallest, replayBytes / shortRoundsPerTest))
    }

    /// What a round of `cut` is expected to move (both replays, both directions): twice its bytes for a TCP cut,
    /// the share of the floor round's bytes that its seconds are of the floor round's for a UDP one.
    static func expectedBytes(of cut: Cut, in plan: AdaptivePlan) -> Int {
        switch (cut, plan.floorRound) {
        case (.bytes(let bytes), _): return 2 * bytes
        case (.seconds(let seconds), .seconds(let floorSeconds)) where floorSeconds > 0:
            return Int((Double(plan.floorRoundBytes) * min(1, seconds / floorSeconds)).rounded(.up))
        case (.seconds, _): return plan.floorRoundBytes
        case (.slice, _): return plan.shortRoundBytes
        }
    }

    /// The most the test may move (the byte cap).
    public var maximumBytes: Int { rule.maximumBytes }
    /// The longest the test may take, seconds (the time cap).
    public var timeLimitSeconds: Double { rule.timeLimitSeconds }
    /// The false-positive bound.
    public var alpha: Double { rule.alpha }

    /// The bytes of a differentiation found as early as the rule allows (its fewest rounds of short rounds).
    public var fewestBytes: Int { (rule.fewestRoundsForDifferentiation ?? 1) * shortRoundBytes }

    /// One line for the user before the test starts: what it costs at least, usually, and at most.
    public var costText: String {
        "adaptive verdict: short rounds of \(shortRound); a clear throttle is found after about "
            + "\(Self.megabytes(fewestBytes)), at most \(Self.megabytes(maximumBytes)) "
            + "(the published test moves \(Self.megabytes(publishedBytes)))"
    }

    static func megabytes(_ bytes: Int) -> String {
        let value = Double(bytes) / 1_000_000
        return value >= 10 ? "\(Int(value.rounded())) MB" : "\((value * 10).rounded() / 10) MB"
    }
}
