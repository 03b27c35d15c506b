public import Foundation
public import WeheAnalysis
public import WeheCore

/// Who drives a DPI search.
public enum DPIMethod: String, Sendable, Hashable, CaseIterable, Codable {
    /// The server's search (analysis.md sections 5.2 and 5.3) through the analyzer's `DPIanalysis` command.
    case server
    /// The same breadth-first search (`DPISearch`) run by the client: for servers without the DPI commands.
    case local
    /// The offline binary search with cumulative masking (analysis.md section 5.5, `BinaryDPISearch`), run by the
    /// client.
    case binary
}

/// How to run a DPI search.
public struct DPIOptions: Sendable, Hashable {
    /// Who drives the search.
    public var method: DPIMethod
    /// The search's limits (10 packets, 200 probes, the first 10 bytes skipped).
    public var search: DPISearchConfiguration
    /// Data budget of the probes, bytes sent and received; the search stops before a probe that could exceed it
    /// (each probe is counted at the size of the test's original replay). `nil`: no budget.
    public var budgetBytes: Int?
    /// Early stop: a probe ends once it has run twice as long as the test's control replay took (and at least ten
    /// sample intervals). A probe that broke the classification runs at the control's speed and finishes before
    /// that; one that did not is throttled like the original, and its first samples already say so.
    public var earlyStop: Bool
    /// testID of the first probe (the iOS client starts at 2); each probe takes the next.
    public var firstTestID: Int

    /// Creates options (server-driven, the reference limits, no budget, no early stop).
    public init(
        method: DPIMethod = .server,
        search: DPISearchConfiguration = DPISearchConfiguration(),
        budgetBytes: Int? = nil,
        earlyStop: Bool = false,
        firstTestID: Int = 2
    ) {
        self.method = method
        self.search = search
        self.budgetBytes = budgetBytes
        self.earlyStop = earlyStop
        self.firstTestID = firstTestID
    }
}

/// One probe that was run.
public struct DPIProbeResult: Sendable, Hashable {
    /// 1-based position in the search.
    public var number: Int
    /// The packet and region inverted.
    public var probe: DPIProbe
    /// Regions of the same packet kept inverted with it (binary method).
    public var mask: [Range<Int>]
    /// The probe replay's testID.
    public var testID: Int
    /// The analysis of the original (testID 0) against this probe.
    public var summary: AnalysisSummary
    /// `diff = T`: the verdict was differentiation, so the inverted bytes broke the classification.
    public var classificationBroke: Bool
    /// Bytes the probe replay sent and received.
    public var bytes: Int
    /// Wall time of the probe (replay and analysis), seconds.
    public var seconds: Double
    /// Whether the replay was cut by the early stop.
    public var stoppedEarly: Bool
    /// The probe's throughput samples.
    public var samples: ThroughputSeries
}

/// Matching bytes the search found.
public struct DPIFinding: Sendable, Hashable {
    /// The packet.
    public var packet: DPIPacketID
    /// The rule: the longest run of matching bytes.
    public var region: Range<Int>
    /// Every offset found to matter in that packet.
    public var matchingBytes: [Int]
    /// The recorded bytes of `region` (client packets; `nil` for server packets, whose content the client does not
    /// have: the published traces record none).
    public var content: [UInt8]?

    /// Lowercase hex of the content.
    public var hex: String? { content.map { $0.map { String(format: "%02x", $0) }.joined() } }

    /// The content as text: printable ASCII as is, every other byte as `\xNN`.
    public var text: String? {
        content.map { bytes in
            bytes.map { byte in
                (0x20..<0x7F).contains(byte) && byte != 0x5C
                    ? String(UnicodeScalar(byte)) : String(format: "\\x%02x", byte)
            }.joined()
        }
    }

    /// The runs of consecutive matching bytes (more than one when the classifier needs separate keywords).
    public var runs: [Range<Int>] {
        var runs: [Range<Int>] = []
        for byte in matchingBytes {
            if let last = runs.last, last.upperBound == byte {
                runs[runs.count - 1] = last.lowerBound..<(byte + 1)
            } else {
                runs.append(byte..<(byte + 1))
            }
        }
        return runs
    }
}

/// How a DPI search ended.
public enum DPIConclusion: Sendable, Hashable {
    /// Matching bytes were found.
    case rules([DPIFinding])
    /// No content rule: the search went through its packets (or the first 10) without a byte that matters.
    case noContentRule(String)
    /// The probe limit (200) ran out.
    case probeLimit(Int)
    /// The next probe could exceed the data budget.
    case budgetExhausted(usedBytes: Int, budgetBytes: Int)

    /// A stable code for JSON and scripts: `rule`, `no-content-rule`, `probe-limit`, `budget`.
    public var code: String {
        switch self {
        case .rules: "rule"
        case .noContentRule: "no-content-rule"
        case .probeLimit: "probe-limit"
        case .budgetExhausted: "budget"
        }
    }
}

/// A finished DPI search.
public struct DPISearchResult: Sendable {
    /// The catalog test id.
    public var test: String
    /// The original replay's name.
    public var replayName: String
    /// The user.
    public var userID: String
    /// The history count of the test whose original the probes were compared with.
    public var historyCount: Int
    /// Who drove it.
    public var method: DPIMethod
    /// Whether probes were cut early.
    public var earlyStop: Bool
    /// How it ended.
    public var conclusion: DPIConclusion
    /// The probes in order.
    public var probes: [DPIProbeResult]
    /// Bytes all probes sent and received.
    public var bytes: Int
    /// Wall time of the search, seconds.
    public var durationSeconds: Double
    /// When it started.
    public var startedAt: Date
}

/// Progress of a DPI search.
public enum DPIEvent: Sendable {
    /// Probe `number` starts; `bytesSoFar` is what the earlier probes used.
    case probeStarted(number: Int, probe: DPIProbe, testID: Int, bytesSoFar: Int)
    /// About once per sample interval while the probe replays.
    case probeProgress(number: Int, bytesReceived: Int)
    /// Probe finished; `bytesSoFar` includes it.
    case probeFinished(DPIProbeResult, bytesSoFar: Int)
}
