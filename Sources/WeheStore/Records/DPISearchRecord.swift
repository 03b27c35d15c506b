package import Foundation

/// Names one DPI search (analysis.md 5.2): the server keeps at most one running search and a history of finished
/// ones per user, provider (`carrierName`) and replay.
package struct DPISearchID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The user.
    package var userID: String
    /// The provider, as the client names it.
    package var carrierName: String
    /// The replay searched.
    package var replayName: String

    /// Creates an identifier.
    package init(userID: String, carrierName: String, replayName: String) {
        self.userID = userID
        self.carrierName = carrierName
        self.replayName = replayName
    }

    /// `user/provider/replay`.
    package var description: String { "\(userID)/\(carrierName)/\(replayName)" }
}

/// A DPI search in progress, as the server keeps it between requests.
package struct DPISearchRecord: Sendable, Hashable {
    /// Which search.
    package var id: DPISearchID
    /// The test (history count) the search started from; its probes are replays of that test.
    package var historyCount: Int
    /// When the search started.
    package var startedAt: Date
    /// When it last changed.
    package var updatedAt: Date
    /// Probes answered so far.
    package var probes: Int
    /// Bytes the answered probes transferred, as far as the server knows.
    package var bytesUsed: Int
    /// The search state, opaque to the store (the server's JSON encoding of its state machine).
    package var state: String

    /// Creates a record.
    package init(
        id: DPISearchID, historyCount: Int, startedAt: Date, updatedAt: Date, probes: Int, bytesUsed: Int,
        state: String
    ) {
        self.id = id
        self.historyCount = historyCount
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.probes = probes
        self.bytesUsed = bytesUsed
        self.state = state
    }
}

/// One rule a finished DPI search found: the matched bytes of one packet.
package struct DPIFoundRule: Sendable, Hashable, Codable {
    /// `C_k` or `S_k`.
    package var packet: String
    /// First byte of the matched run.
    package var left: Int
    /// One past its last byte.
    package var right: Int
    /// The matched bytes.
    package var content: [UInt8]
    /// Every byte offset of the packet found to matter.
    package var matchingBytes: [Int]
    /// The whole payload of the packet (for showing the match in context), when known.
    package var packetPayload: [UInt8]?

    /// Creates a rule.
    package init(
        packet: String, left: Int, right: Int, content: [UInt8], matchingBytes: [Int], packetPayload: [UInt8]? = nil
    ) {
        self.packet = packet
        self.left = left
        self.right = right
        self.content = content
        self.matchingBytes = matchingBytes
        self.packetPayload = packetPayload
    }
}

/// A finished DPI search: its outcome and what it cost.
package struct DPIResultRecord: Sendable, Hashable {
    /// Which search.
    package var id: DPISearchID
    /// The test the search started from.
    package var historyCount: Int
    /// When the search started.
    package var startedAt: Date
    /// When it finished.
    package var finishedAt: Date
    /// Probes answered.
    package var probes: Int
    /// Bytes the probes transferred, as far as the server knows.
    package var bytesUsed: Int
    /// `rule`, or the reason there is none (`packetsExhausted`, `noDPIInFirstPackets`, `probeLimitReached`,
    /// `noProbeablePacket`).
    package var outcome: String
    /// A sentence describing the outcome.
    package var message: String
    /// The rules found (empty unless `outcome == "rule"`).
    package var rules: [DPIFoundRule]

    /// Creates a record.
    package init(
        id: DPISearchID, historyCount: Int, startedAt: Date, finishedAt: Date, probes: Int, bytesUsed: Int,
        outcome: String, message: String, rules: [DPIFoundRule]
    ) {
        self.id = id
        self.historyCount = historyCount
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.probes = probes
        self.bytesUsed = bytesUsed
        self.outcome = outcome
        self.message = message
        self.rules = rules
    }

    /// Whether the search found a rule.
    package var foundRule: Bool { outcome == "rule" }
}

/// Which finished DPI searches to read: every given field must match; newest first, at most `limit`.
package struct DPIResultQuery: Sendable, Hashable {
    /// The user.
    package var userID: String?
    /// The provider.
    package var carrierName: String?
    /// The replay.
    package var replayName: String?
    /// The test the search started from.
    package var historyCount: Int?
    /// Only searches that found a rule.
    package var rulesOnly: Bool
    /// At most this many.
    package var limit: Int

    /// Creates a query.
    package init(
        userID: String? = nil, carrierName: String? = nil, replayName: String? = nil, historyCount: Int? = nil,
        rulesOnly: Bool = false, limit: Int = 100
    ) {
        self.userID = userID
        self.carrierName = carrierName
        self.replayName = replayName
        self.historyCount = historyCount
        self.rulesOnly = rulesOnly
        self.limit = limit
    }

    /// Whether `record` matches.
    package func matches(_ record: DPIResultRecord) -> Bool {
        (userID == nil || record.id.userID == userID) && (carrierName == nil || record.id.carrierName == carrierName)
            && (replayName == nil || record.id.replayName == replayName)
            && (historyCount == nil || record.historyCount == historyCount) && (!rulesOnly || record.foundRule)
    }
}

extension DPIResultRecord {
    /// The rules as JSON text (the SQL stores keep them in one column).
    package static func encodeRules(_ rules: [DPIFoundRule]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(rules) else { return "[]" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Rules from their JSON text, or `nil` when it is malformed.
    package static func decodeRules(_ text: String) -> [DPIFoundRule]? {
        try? JSONDecoder().decode([DPIFoundRule].self, from: Data(text.utf8))
    }
}
