/// The analyzer's DPI search commands (analysis.md section 5.2, protocol.md section 9.6): `DPIanalysis`,
/// `DPIrule` and `DPIreset`, shared by the server (which runs the search) and the client (which runs the probes).
///
/// Requests go to `/Results` like every analyzer command (GET query or POST form body):
///
/// * `command=DPIanalysis&userID=…&carrierName=…&replayName=…&historyCount=…&testID=…&testedLeft=…&testedRight=…
///   &diff=T|F` — with `testedLeft = testedRight = -1` the server answers the probe to run now (starting a search
///   when none is running); otherwise the client reports the result of the probe it was handed out (`diff=T`: the
///   verdict of the modified replay was *differentiation*, so the region holds matching bytes) and gets the next
///   probe or the outcome. Our extensions, optional: `testPacket=C_k|S_k` (the packet of the probe being reported,
///   checked against the server's) and `probeBytes=<n>` (bytes the probe's replay transferred, both directions,
///   for the cost of the search). A report's `testID` is the probe replay's own (2, 3, …: 0 and 1 are the test's
///   original and control and are refused); its `historyCount` is the test's whose original the probes replay.
/// * `command=DPIrule&userID=…&carrierName=…&replayName=…` — the outcome of the last finished search for that user,
///   replay and provider, or `{"success": false, "error": "No result found"}`.
/// * `command=DPIreset&userID=…&carrierName=…&replayName=…` — drops the search in progress (the last finished
///   outcome stays): `{"success": true, "response": {"reset": true|false}}` (false: there was none).
///
/// Answers use the analyzer envelope, numbers as JSON numbers:
///
/// * a probe: `{"success": true, "response": {"status": "probe", "testPacket": "C_1", "testRegionLeft": 10,
///   "testRegionRight": 230, "packetLength": 230, "numTests": 0, "testedPackets": 0, "bytesUsed": 0}}` — invert
///   bytes `[testRegionLeft, testRegionRight)` (all 8 bits of each) of the named packet on the side that sends it;
///   `numTests` probes have been answered so far;
/// * a rule: `{"success": true, "response": {"status": "rule", "DPIrule": [{"C_1": "<hex>"}], "numTests": 27,
///   "bytesUsed": …, "rules": [{"packet": "C_1", "left": 100, "right": 108, "hex": "<hex>",
///   "matchingBytes": [100, …]}]}}` — `DPIrule` keeps the reference's `[{packet: content}]` shape, with the
///   content as **lowercase hex** of the matched bytes (the longest run of matching bytes of that packet, bytes
///   `[left, right)` of its payload); `rules` says where they are and every byte offset found to matter;
/// * no rule: `{"success": true, "response": {"status": "noRule", "reason": "packetsExhausted", "message": "…",
///   "DPIrule": [], "numTests": 3, "bytesUsed": …}}` with `reason` one of `DPINoRuleReason`; every reason means
///   "no content rule": the search found no bytes whose change breaks the classification;
/// * a refusal: `{"success": false, "error": "<text>", "dpiError": "<DPIErrorCode>"}` (absent or malformed
///   parameters also answer the analyzer's usual `{"success": false, "missing"|"value error": …}` without
///   `dpiError`; readers treat both as `AnalyzerFailure`).
///
/// `DPIrule` answers like a finished `DPIanalysis` plus `"timestamp": "YYYY-MM-DD HH:MM:SS"` (UTC).
public enum DPIMessages {
    /// `DPIanalysis`.
    public static let analysisCommand = "DPIanalysis"
    /// `DPIrule`.
    public static let ruleCommand = "DPIrule"
    /// `DPIreset`.
    public static let resetCommand = "DPIreset"
}

/// Names one search: per user, replay and provider (analysis.md 5.2). The parameters of `DPIrule` and `DPIreset`.
public struct DPISearchKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The user.
    public var userID: String
    /// The provider (`carrierName`), as the client names it.
    public var carrierName: String
    /// The replay searched (its name as in the replay catalog, e.g. `Netflix-12122018`).
    public var replayName: String

    /// Creates a key.
    public init(userID: String, carrierName: String, replayName: String) {
        self.userID = userID
        self.carrierName = carrierName
        self.replayName = replayName
    }

    /// Reads `userID`, `carrierName`, `replayName` from request parameters (surrounding spaces trimmed).
    /// - Throws: `WeheWireError` `.unexpectedStructure` naming the first missing or empty field.
    public init(form parameters: [String: String]) throws(WeheWireError) {
        func field(_ name: String) throws(WeheWireError) -> String {
            guard let value = parameters[name]?.trimmedSpaces, !value.isEmpty else {
                throw WeheWireError(.unexpectedStructure, "'\(name)' is missing", field: name)
            }
            return value
        }
        self.init(
            userID: try field("userID"), carrierName: try field("carrierName"), replayName: try field("replayName"))
    }

    /// The form pairs of `command` (`DPIrule` or `DPIreset`) for this search.
    public func formPairs(command: String) -> [(String, String)] {
        [("command", command), ("userID", userID), ("carrierName", carrierName), ("replayName", replayName)]
    }

    /// `user/provider/replay`.
    public var description: String { "\(userID)/\(carrierName)/\(replayName)" }
}

/// A `DPIanalysis` request.
public struct DPIAnalysisRequest: Sendable, Hashable, Codable {
    /// Which search.
    public var key: DPISearchKey
    /// The test counter of the probe's replay (the client's `historyCount`).
    public var historyCount: Int
    /// The testID the probe's replay used (the client picks a fresh one per probe, e.g. 2, 3, …).
    public var testID: Int
    /// Left edge of the probe being reported, or -1 to ask for the current probe.
    public var testedLeft: Int
    /// Right edge (exclusive) of the probe being reported, or -1 to ask for the current probe.
    public var testedRight: Int
    /// `diff=T`: the modified replay's verdict was differentiation (the classification broke).
    public var diff: Bool
    /// Our extension `testPacket`: the packet of the probe being reported (`C_k`/`S_k`); the server refuses a
    /// report whose packet is not the current probe's. Absent: only the region is checked (the reference's rule).
    public var testedPacket: String?
    /// Our extension `probeBytes`: bytes the probe's replay transferred (sent plus received), for the cost.
    public var probeBytes: Int?

    /// Creates a request.
    public init(
        key: DPISearchKey, historyCount: Int, testID: Int, testedLeft: Int, testedRight: Int, diff: Bool,
        testedPacket: String? = nil, probeBytes: Int? = nil
    ) {
        self.key = key
        self.historyCount = historyCount
        self.testID = testID
        self.testedLeft = testedLeft
        self.testedRight = testedRight
        self.diff = diff
        self.testedPacket = testedPacket
        self.probeBytes = probeBytes
    }

    /// The request asking for the current probe (`testedLeft = testedRight = -1`, `diff=F`).
    public static func currentProbe(key: DPISearchKey, historyCount: Int, testID: Int) -> DPIAnalysisRequest {
        DPIAnalysisRequest(
            key: key, historyCount: historyCount, testID: testID, testedLeft: -1, testedRight: -1, diff: false)
    }

    /// Whether this only asks for the current probe.
    public var asksForCurrentProbe: Bool { testedLeft == -1 && testedRight == -1 }

    /// Form pairs, in the reference's order, extensions last.
    public var formPairs: [(String, String)] {
        var pairs: [(String, String)] = [
            ("command", DPIMessages.analysisCommand), ("userID", key.userID), ("carrierName", key.carrierName),
            ("replayName", key.replayName), ("historyCount", String(historyCount)), ("testID", String(testID)),
            ("testedLeft", String(testedLeft)), ("testedRight", String(testedRight)), ("diff", diff ? "T" : "F"),
        ]
        if let testedPacket { pairs.append(("testPacket", testedPacket)) }
        if let probeBytes { pairs.append(("probeBytes", String(probeBytes))) }
        return pairs
    }

    /// Reads a request from its parameters. `diff` must be `T` or `F` when a probe is reported (absent is read as F
    /// when asking for the current probe); `historyCount`, `testID` and `probeBytes` must be non-negative integers;
    /// the edges integers, both -1 or `0 <= testedLeft < testedRight`.
    /// - Throws: `WeheWireError` naming the field: `.unexpectedStructure` when missing, `.invalidValue` when malformed.
    public init(form parameters: [String: String]) throws(WeheWireError) {
        let key = try DPISearchKey(form: parameters)
        func integer(_ name: String, minimum: Int) throws(WeheWireError) -> Int {
            guard let text = parameters[name]?.trimmedSpaces else {
                throw WeheWireError(.unexpectedStructure, "'\(name)' is missing", field: name)
            }
            guard let value = Int(text), value >= minimum else {
                throw WeheWireError(
                    .invalidValue, "'\(name)' must be an integer of at least \(minimum), not '\(text.prefix(20))'",
                    field: name)
            }
            return value
        }
        let left = try integer("testedLeft", minimum: -1)
        let right = try integer("testedRight", minimum: -1)
        let asking = left == -1 && right == -1
        guard asking || (left >= 0 && right > left) else {
            throw WeheWireError(
                .invalidValue, "tested region [\(left),\(right)) is neither -1/-1 nor a non-empty range",
                field: "testedLeft")
        }
        let diff: Bool
        switch parameters["diff"]?.trimmedSpaces {
        case "T"?: diff = true
        case "F"?: diff = false
        case nil where asking: diff = false
        case nil: throw WeheWireError(.unexpectedStructure, "'diff' is missing", field: "diff")
        case let other?:
            throw WeheWireError(.invalidValue, "'diff' must be T or F, not '\(other.prefix(20))'", field: "diff")
        }
        var probeBytes: Int?
        if parameters["probeBytes"] != nil { probeBytes = try integer("probeBytes", minimum: 0) }
        let packet = parameters["testPacket"]?.trimmedSpaces
        if let packet, !DPIProbeMessage.isPacketName(packet) {
            throw WeheWireError(
                .invalidValue, "'testPacket' is not C_k or S_k: '\(packet.prefix(20))'", field: "testPacket")
        }
        self.init(
            key: key, historyCount: try integer("historyCount", minimum: 0), testID: try integer("testID", minimum: 0),
            testedLeft: left, testedRight: right, diff: diff, testedPacket: packet, probeBytes: probeBytes)
    }
}

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

extension String {
    fileprivate var trimmedSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
