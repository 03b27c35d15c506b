import WeheClient
import WeheCore
import WeheTestbed

/// What `wehe demo` does without `--tests` or `--throttle`: two app tests through the built-in middlebox, one
/// whose app traffic alone is slowed (its control passes: differentiation) and one whose app and control traffic are
/// slowed alike (no differentiation), so that a first run shows both outcomes and why they differ.
///
/// Why both go through the same cap: on loopback an unshaped replay of a short trace ends in a few bursts, too few
/// throughput samples for any verdict (the bundled traces came out "inconclusive"), and its speed depends on the
/// machine. At the cap every replay lasts a few seconds at a known rate, so the samples are many and the outcome
/// depends only on what was slowed.
struct DemoPlan: Sendable {
    /// The test whose app traffic alone is slowed.
    var slowed: ReplayClient.Test
    /// The test whose app and control traffic are slowed alike.
    var even: ReplayClient.Test
    /// The cap, bits per second.
    var rateBitsPerSecond: Int

    /// How long a capped replay should last: long enough for many samples, short enough for the whole demo (four
    /// replays, three of them capped) to stay well under 30 s.
    static let cappedSeconds = 4.0
    /// The cap stays at most this fraction of the trace's own average rate, so that a trace with recorded timing is
    /// really slowed (a cap above what the trace needs reshapes bursts without lowering its average).
    static let fractionOfAverage = 1.0 / 4
    /// Throughput samples over a test's catalog time (the published servers ask for 100): the unshaped control of
    /// the test slowed alone crosses loopback in a fraction of a second, in a few bursts of its short trace, and
    /// needs a fine grid for the five samples a verdict requires (Deezer's control had 4 at 100).
    static let sampleCount = 1000
    /// The lowest cap: the middlebox's token bucket is coarse below it.
    static let minimumRate = 64_000

    /// The two app tests over TCP (the middlebox recognises TCP flows by their first bytes) with the shortest
    /// recorded duration, then the fewest bytes; `nil` when fewer than two are available.
    static func choose(_ tests: [ReplayClient.Test]) -> DemoPlan? {
        let candidates = tests.filter {
            !$0.entry.isPortTest && $0.original.transport == .tcp && $0.control.transport == .tcp
                && $0.original.bytesDown > 0
        }
        .sorted { (Self.duration($0), Self.bytes($0)) < (Self.duration($1), Self.bytes($1)) }
        guard candidates.count >= 2 else { return nil }
        // The larger of the two is slowed alone: its control, which crosses the middlebox unshaped, then has more
        // bytes and so more throughput samples.
        let (slowed, even) =
            bytes(candidates[0]) >= bytes(candidates[1])
            ? (candidates[0], candidates[1]) : (candidates[1], candidates[0])
        return DemoPlan(slowed: slowed, even: even, rateBitsPerSecond: rate(for: [slowed, even]))
    }

    /// The cap: the larger trace takes about `cappedSeconds`, and the cap is at most a quarter of the average rate
    /// either trace needs with its recorded timing.
    static func rate(for tests: [ReplayClient.Test]) -> Int {
        let largest = tests.map(bytes).max() ?? 0
        var rate = Double(largest) * 8 / cappedSeconds
        for test in tests where duration(test) > 0 {
            rate = min(rate, Double(bytes(test)) * 8 / duration(test) * fractionOfAverage)
        }
        return max(minimumRate, Int(rate.rounded()))
    }

    /// Bytes of a replay (the larger of the two traces): what crosses the cap.
    static func bytes(_ test: ReplayClient.Test) -> Int {
        max(test.original.bytesDown + test.original.bytesUp, test.control.bytesDown + test.control.bytesUp)
    }

    /// The recorded duration (the longer of the two traces), seconds.
    static func duration(_ test: ReplayClient.Test) -> Double { max(test.original.duration, test.control.duration) }

    /// The middlebox's classifier: the first bytes of each flow of the slowed test's original trace, and of both
    /// traces of the evenly slowed test.
    var classifier: ThrottlingProxyConfiguration.Classifier {
        var patterns: [[UInt8]] = []
        for trace in [slowed.original, even.original, even.control] {
            for pattern in DemoThrottle.patterns(trace) where !patterns.contains(pattern) { patterns.append(pattern) }
        }
        return .patterns(patterns)
    }
}

extension Strings {
    /// The demo's plan, before it runs.
    func demoPlanNote(slowed: String, even: String, bitsPerSecond: Int) -> String {
        let rate = Terminal.format(Double(bitsPerSecond) / 1e6, decimals: 2, language: language)
        return language == .fr
            ? "Un boîtier de bridage sur 127.0.0.2 limite à \(rate) Mbit/s le trafic de \(slowed) seul (pas son "
                + "contrôle), puis celui de \(even) et de son contrôle ensemble."
            : "A throttling middlebox on 127.0.0.2 slows \(slowed)'s own traffic (not its control) to \(rate) Mbit/s, "
                + "then \(even)'s traffic and its control's alike."
    }

    /// One line after the demo: what was slowed and what Wehe concluded for each test.
    func demoOutcome(slowed: TestResult, even: TestResult) -> String {
        func verdict(_ result: TestResult) -> String {
            var text = self.verdict(result.verdict.rawValue)
            if let direction = result.direction { text += " (\(self.direction(direction.rawValue)))" }
            return text
        }
        return language == .fr
            ? "Ce qui s'est passé : seul \(slowed.name) était bridé, pas son contrôle → \(verdict(slowed)) ; "
                + "\(even.name) et son contrôle étaient bridés pareil → \(verdict(even)). Wehe signale une "
                + "différence entre une appli et son contrôle, pas un réseau lent pour tout le monde."
            : "What happened: only \(slowed.name) was throttled, not its control → \(verdict(slowed)); "
                + "\(even.name) and its control were throttled alike → \(verdict(even)). Wehe flags a difference "
                + "between an app and its control, not a network that is slow for everything."
    }
}
