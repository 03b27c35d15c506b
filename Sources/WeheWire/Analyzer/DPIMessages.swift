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

extension String {
    fileprivate var trimmedSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
