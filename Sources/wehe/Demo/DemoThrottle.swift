import WeheClient
import WeheCore
import WeheTestbed

/// `--throttle <test>:<rate>`: which demo test the userspace middlebox slows down, and to what rate.
struct DemoThrottle: Sendable, Hashable {
    /// The catalog id of the throttled test.
    var test: String
    /// The token-bucket rate.
    var rateBitsPerSecond: Int

    /// Parses `youtube:1.5mbit`.
    init(parsing text: String) throws {
        guard let colon = text.lastIndex(of: ":"), colon != text.startIndex else {
            throw CLIError(code: .invalidInput, "--throttle must be <test>:<rate>, e.g. youtube:1.5mbit")
        }
        test = String(text[..<colon])
        do {
            rateBitsPerSecond = try ThrottlingProxyConfiguration.parseBitRate(String(text[text.index(after: colon)...]))
        } catch {
            throw CLIError(code: .invalidInput, "--throttle: \(error.description)")
        }
    }

    /// How the middlebox recognises the throttled test's flows, like a DPI box would: for an app test, the first
    /// bytes of each flow of the original trace (a TLS hello with its SNI, an HTTP request line; the bit-inverted
    /// control never contains them); for a port test, the server port its replay lands on.
    static func classifier(
        for test: ReplayClient.Test,
        tcpPorts: [Int: Int]
    ) -> ThrottlingProxyConfiguration.Classifier {
        if test.entry.isPortTest {
            let recorded = test.original.flows.map { Int($0.serverPort) }
            return .serverPorts(Set(recorded.compactMap { tcpPorts[$0] }))
        }
        return .patterns(patterns(test.original))
    }

    /// The first bytes of each flow of a trace (distinct ones, in order).
    static func patterns(_ trace: ReplayTrace) -> [[UInt8]] {
        var patterns: [[UInt8]] = []
        var seen: Set<CSPair> = []
        for packet in trace.packets where !packet.payload.isEmpty && !seen.contains(packet.csPair) {
            seen.insert(packet.csPair)
            let pattern = Array(packet.payload.prefix(patternLength))
            if !patterns.contains(pattern) { patterns.append(pattern) }
        }
        return patterns
    }

    /// Bytes of each flow's first payload used as its signature.
    static let patternLength = 32
}
