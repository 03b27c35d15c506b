// The answers of the DPI search commands (their shapes are in `DPIMessages`'s documentation).

/// A probe handed out by the server.
public struct DPIProbeMessage: Sendable, Hashable, Codable {
    /// `C_k` (k-th client payload packet) or `S_k` (k-th server payload packet), numbered from 1 per side in trace
    /// order over packets with a non-empty payload (analysis.md 5.3).
    public var testPacket: String
    /// First byte to invert.
    public var testRegionLeft: Int
    /// One past the last byte to invert.
    public var testRegionRight: Int
    /// The payload length of `testPacket`.
    public var packetLength: Int
    /// Probes answered so far in this search.
    public var numTests: Int
    /// Packets finished without a match so far.
    public var testedPackets: Int
    /// Bytes the answered probes transferred, as far as the server knows (client reports, else replays it served).
    public var bytesUsed: Int

    /// Creates a probe message.
    public init(
        testPacket: String, testRegionLeft: Int, testRegionRight: Int, packetLength: Int, numTests: Int,
        testedPackets: Int, bytesUsed: Int
    ) {
        self.testPacket = testPacket
        self.testRegionLeft = testRegionLeft
        self.testRegionRight = testRegionRight
        self.packetLength = packetLength
        self.numTests = numTests
        self.testedPackets = testedPackets
        self.bytesUsed = bytesUsed
    }

    /// Whether the probe modifies a server packet (`S_k`), i.e. goes through the side channel's change spec.
    public var isServerPacket: Bool { testPacket.hasPrefix("S_") }

    /// The 1-based number of the packet among its side's payload packets.
    public var packetNumber: Int? {
        Self.isPacketName(testPacket) ? Int(testPacket.dropFirst(2)) : nil
    }

    /// Whether `text` is `C_k` or `S_k` with k ≥ 1.
    public static func isPacketName(_ text: String) -> Bool {
        guard text.hasPrefix("C_") || text.hasPrefix("S_"), let number = Int(text.dropFirst(2)) else { return false }
        return number >= 1 && !text.dropFirst(2).hasPrefix("+")
    }
}

/// One found rule: the matched bytes of one packet.
public struct DPIRuleMessage: Sendable, Hashable, Codable {
    /// `C_k` or `S_k`.
    public var packet: String
    /// First byte of the longest run of matching bytes.
    public var left: Int
    /// One past its last byte.
    public var right: Int
    /// The payload bytes `[left, right)`, lowercase hex.
    public var hex: String
    /// Every byte offset of the packet found to matter, ascending (a superset of `left..<right` when the
    /// classifier needs several separate keywords of one packet).
    public var matchingBytes: [Int]

    /// Creates a rule message.
    public init(packet: String, left: Int, right: Int, hex: String, matchingBytes: [Int]) {
        self.packet = packet
        self.left = left
        self.right = right
        self.hex = hex
        self.matchingBytes = matchingBytes
    }

    /// The matched bytes (decoded `hex`; nil when it is not valid hex).
    public var bytes: [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = HexCodec.nibble(utf8[index]), let low = HexCodec.nibble(utf8[index + 1]) else {
                return nil
            }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// The matched bytes as text: printable ASCII kept, every other byte shown as `.`.
    public var printableText: String {
        String(decoding: (bytes ?? []).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
    }
}

/// Why a search ended without a rule. Every case means "no content rule": no bytes were found whose change breaks
/// the classification (for example a port-based classifier, or no classifier at all).
public enum DPINoRuleReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every payload packet of the trace was probed without a matching byte (the reference crashes here, defect 3).
    case packetsExhausted
    /// 10 packets were probed without a matching byte ("NO DPI for first 10 pacs").
    case noDPIInFirstPackets
    /// The probe budget of 200 ran out ("NO DPI after 200 tests").
    case probeLimitReached
    /// The trace has no packet the search may modify (every payload lies within the 10 untouched leading bytes).
    case noProbeablePacket
}

/// A search that ended without a rule.
public struct DPINoRuleMessage: Sendable, Hashable, Codable {
    /// Why.
    public var reason: DPINoRuleReason
    /// Human text (the reference's wording for the two limits: "NO DPI for first 10 pacs", "NO DPI after 200 tests").
    public var message: String
    /// Probes answered.
    public var numTests: Int
    /// Bytes the probes transferred, as far as the server knows.
    public var bytesUsed: Int

    /// Creates a message.
    public init(reason: DPINoRuleReason, message: String, numTests: Int, bytesUsed: Int) {
        self.reason = reason
        self.message = message
        self.numTests = numTests
        self.bytesUsed = bytesUsed
    }
}

/// A search that found matching bytes.
public struct DPIRulesMessage: Sendable, Hashable, Codable {
    /// One rule per packet with matching bytes, in trace order.
    public var rules: [DPIRuleMessage]
    /// Probes answered.
    public var numTests: Int
    /// Bytes the probes transferred, as far as the server knows.
    public var bytesUsed: Int

    /// Creates a message.
    public init(rules: [DPIRuleMessage], numTests: Int, bytesUsed: Int) {
        self.rules = rules
        self.numTests = numTests
        self.bytesUsed = bytesUsed
    }
}

/// Machine-readable reasons of a `DPIanalysis` / `DPIrule` / `DPIreset` refusal (`dpiError` in the answer).
public enum DPIErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    /// A parameter is missing or malformed.
    case invalidParameter
    /// The server has no replay of that name (or its trace has no payload packets).
    case unknownReplay
    /// A result was reported but no search is running for that user, replay and provider (ask with -1/-1 first).
    case noProbeOutstanding
    /// The reported region (or `testPacket`) is not the probe last handed out.
    case regionMismatch
    /// The server keeps no DPI state (no result store configured) or could not read or write it.
    case unavailable
}

/// The answer of `DPIanalysis` (and, for finished searches, `DPIrule`).
public enum DPIAnalysisResponse: Sendable, Hashable, Codable {
    /// Run this probe next.
    case probe(DPIProbeMessage)
    /// The search found rules.
    case rules(DPIRulesMessage)
    /// The search ended without a rule.
    case noRule(DPINoRuleMessage)

    /// The response body: `{"success": true, "response": {…}}`; `timestamp` (`YYYY-MM-DD HH:MM:SS`, UTC) is added
    /// for `DPIrule` answers.
    public func responseBody(timestamp: String? = nil) -> String {
        var members: [(String, JSONValue)]
        func int(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        switch self {
        case .probe(let probe):
            members = [
                ("status", .string("probe")), ("testPacket", .string(probe.testPacket)),
                ("testRegionLeft", int(probe.testRegionLeft)), ("testRegionRight", int(probe.testRegionRight)),
                ("packetLength", int(probe.packetLength)), ("numTests", int(probe.numTests)),
                ("testedPackets", int(probe.testedPackets)), ("bytesUsed", int(probe.bytesUsed)),
            ]
        case .rules(let found):
            members = [
                ("status", .string("rule")),
                ("DPIrule", .array(found.rules.map { .object([($0.packet, .string($0.hex))]) })),
                ("numTests", int(found.numTests)), ("bytesUsed", int(found.bytesUsed)),
                (
                    "rules",
                    .array(
                        found.rules.map {
                            .object([
                                ("packet", .string($0.packet)), ("left", int($0.left)), ("right", int($0.right)),
                                ("hex", .string($0.hex)), ("matchingBytes", .array($0.matchingBytes.map(int))),
                            ])
                        })
                ),
            ]
        case .noRule(let none):
            members = [
                ("status", .string("noRule")), ("reason", .string(none.reason.rawValue)),
                ("message", .string(none.message)), ("DPIrule", .array([])), ("numTests", int(none.numTests)),
                ("bytesUsed", int(none.bytesUsed)),
            ]
        }
        if let timestamp { members.append(("timestamp", .string(timestamp))) }
        return JSONValue.object([("success", .bool(true)), ("response", .object(members))]).serialized()
    }

    /// The refusal body `{"success": false, "error": message, "dpiError": code}`.
    public static func failureBody(_ code: DPIErrorCode, _ message: String) -> String {
        JSONValue.object([("success", .bool(false)), ("error", .string(message)), ("dpiError", .string(code.rawValue))])
            .serialized()
    }

    /// The `dpiError` code of a refusal body, if it has one.
    public static func errorCode(_ body: [UInt8]) -> DPIErrorCode? {
        guard let root = try? JSONValue.parse(body), case .string(let text)? = root["dpiError"] else { return nil }
        return DPIErrorCode(rawValue: text)
    }

    /// Parses a `DPIanalysis` or `DPIrule` answer. Integers may be JSON numbers or strings.
    /// - Returns: `.success(response)` or `.failure` for `{"success": false, …}`.
    /// - Throws: `WeheWireError` when the body is not such an answer.
    public static func parse(_ body: [UInt8]) throws(WeheWireError) -> Result<DPIAnalysisResponse, AnalyzerFailure> {
        let root = try JSONValue.parse(body)
        guard case .bool(let success)? = root["success"] else {
            throw WeheWireError(.unexpectedStructure, "analyzer answer has no boolean 'success'", field: "success")
        }
        guard success else { return .failure(AnalyzerFailure(root)) }
        guard let response = root["response"], case .object = response else {
            throw WeheWireError(.unexpectedStructure, "DPI answer has no 'response' object", field: "response")
        }
        func string(_ value: JSONValue?, _ name: String) throws(WeheWireError) -> String {
            switch value {
            case .string(let text)?: return text
            case .number(_, let text)?: return text
            default: throw WeheWireError(.unexpectedStructure, "DPI answer has no '\(name)'", field: name)
            }
        }
        func int(_ value: JSONValue?, _ name: String) throws(WeheWireError) -> Int {
            let text = try string(value, name)
            guard let number = Int(text) else {
                throw WeheWireError(.invalidValue, "'\(name)' is not an integer: '\(text.prefix(20))'", field: name)
            }
            return number
        }
        func optionalInt(_ name: String) throws(WeheWireError) -> Int {
            response[name] == nil ? 0 : try int(response[name], name)
        }
        let numTests = try optionalInt("numTests")
        let bytesUsed = try optionalInt("bytesUsed")
        let status = response["status"].flatMap { if case .string(let text) = $0 { text } else { nil } }
        if status == "probe" || (status == nil && response["testPacket"] != nil) {
            let packet = try string(response["testPacket"], "testPacket")
            guard DPIProbeMessage.isPacketName(packet) else {
                throw WeheWireError(.invalidValue, "'testPacket' is not C_k or S_k", field: "testPacket")
            }
            let left = try int(response["testRegionLeft"], "testRegionLeft")
            let right = try int(response["testRegionRight"], "testRegionRight")
            guard left >= 0, right > left else {
                throw WeheWireError(.invalidValue, "probe region [\(left),\(right)) is empty", field: "testRegionLeft")
            }
            return .success(
                .probe(
                    DPIProbeMessage(
                        testPacket: packet, testRegionLeft: left, testRegionRight: right,
                        packetLength: response["packetLength"] == nil
                            ? right : try int(response["packetLength"], "packetLength"),
                        numTests: numTests, testedPackets: try optionalInt("testedPackets"), bytesUsed: bytesUsed)))
        }
        if status == "noRule" {
            let reasonText = try string(response["reason"], "reason")
            guard let reason = DPINoRuleReason(rawValue: reasonText) else {
                throw WeheWireError(.invalidValue, "unknown no-rule reason '\(reasonText.prefix(40))'", field: "reason")
            }
            let message = (try? string(response["message"], "message")) ?? reasonText
            return .success(
                .noRule(DPINoRuleMessage(reason: reason, message: message, numTests: numTests, bytesUsed: bytesUsed)))
        }
        guard status == "rule" || status == nil else {
            throw WeheWireError(.invalidValue, "unknown DPI status '\(status ?? "")'", field: "status")
        }
        guard case .array(let entries)? = response["rules"] else {
            throw WeheWireError(.unexpectedStructure, "DPI rule answer has no 'rules' array", field: "rules")
        }
        var rules: [DPIRuleMessage] = []
        for entry in entries {
            let packet = try string(entry["packet"], "packet")
            guard DPIProbeMessage.isPacketName(packet) else {
                throw WeheWireError(.invalidValue, "rule packet is not C_k or S_k", field: "packet")
            }
            var offsets: [Int] = []
            if case .array(let values)? = entry["matchingBytes"] {
                for value in values { offsets.append(try int(value, "matchingBytes")) }
            }
            let rule = DPIRuleMessage(
                packet: packet, left: try int(entry["left"], "left"), right: try int(entry["right"], "right"),
                hex: try string(entry["hex"], "hex"), matchingBytes: offsets)
            guard rule.left >= 0, rule.right > rule.left, rule.bytes?.count == rule.right - rule.left else {
                throw WeheWireError(.invalidValue, "rule \(packet) has an inconsistent region or hex", field: "rules")
            }
            rules.append(rule)
        }
        return .success(.rules(DPIRulesMessage(rules: rules, numTests: numTests, bytesUsed: bytesUsed)))
    }
}

/// The `DPIreset` answer: `{"success": true, "response": {"reset": <whether a search was in progress>}}`.
public enum DPIResetResponse {
    /// The body.
    public static func body(reset: Bool) -> String {
        JSONValue.object([("success", .bool(true)), ("response", .object([("reset", .bool(reset))]))]).serialized()
    }
}
