/// The `singleResult` answer of the analyzer (protocol.md section 9.3). On the wire every value is a JSON string
/// (the iOS client requires strings); readers accept numbers too.
public struct SingleResult: Sendable, Hashable {
    /// Name of the replay of `testID` (the control for a normal test).
    public var replayName: String
    /// `YYYY-MM-DD HH:MM:SS`, UTC, arrival of the original replay.
    public var date: String
    /// The user.
    public var userID: String
    /// Echo of the client's extra string.
    public var extraString: String
    /// The test counter.
    public var historyCount: Int
    /// The compared test id (1 for normal tests).
    public var testID: Int
    /// `area_test`.
    public var areaTest: Double
    /// `ks2_ratio_test`.
    public var ks2RatioTest: Double
    /// `xput_avg_original`, Mbit/s.
    public var originalMeanMbps: Double
    /// `xput_avg_test`, Mbit/s.
    public var controlMeanMbps: Double
    /// `ks2dVal`.
    public var ksStatistic: Double
    /// `ks2pVal`.
    public var ksPValue: Double
    /// Our extension key `insufficient_data`: why the samples cannot support a verdict ("too few measurements: …"),
    /// sent by our server when its analysis was inconclusive for that reason; absent otherwise and from the published
    /// server. Published clients ignore it.
    public var insufficientData: String?
    /// Our extension keys `as_number` and `as_name`: the AS of the address the client's side channel came from, from
    /// the table the server's operator supplied; absent without a table or a match. Published clients ignore them.
    public var asNumber: UInt32?
    /// The AS's name (`as_name`), when the operator's names file lists it.
    public var asName: String?

    /// Creates a result.
    public init(
        replayName: String,
        date: String,
        userID: String,
        extraString: String,
        historyCount: Int,
        testID: Int,
        areaTest: Double,
        ks2RatioTest: Double,
        originalMeanMbps: Double,
        controlMeanMbps: Double,
        ksStatistic: Double,
        ksPValue: Double,
        insufficientData: String? = nil,
        asNumber: UInt32? = nil,
        asName: String? = nil
    ) {
        self.replayName = replayName
        self.date = date
        self.userID = userID
        self.extraString = extraString
        self.historyCount = historyCount
        self.testID = testID
        self.areaTest = areaTest
        self.ks2RatioTest = ks2RatioTest
        self.originalMeanMbps = originalMeanMbps
        self.controlMeanMbps = controlMeanMbps
        self.ksStatistic = ksStatistic
        self.ksPValue = ksPValue
        self.insufficientData = insufficientData
        self.asNumber = asNumber
        self.asName = asName
    }

    /// `{"success": true, "response": {…}}` with every value a string.
    public var responseBody: String {
        JSONValue.object([
            ("success", .bool(true)),
            (
                "response",
                .object(
                    [
                        ("replayName", .string(replayName)), ("date", .string(date)), ("userID", .string(userID)),
                        ("extraString", .string(extraString)), ("historyCount", .string(String(historyCount))),
                        ("testID", .string(String(testID))), ("area_test", .string(Self.text(areaTest))),
                        ("ks2_ratio_test", .string(Self.text(ks2RatioTest))),
                        ("xput_avg_original", .string(Self.text(originalMeanMbps))),
                        ("xput_avg_test", .string(Self.text(controlMeanMbps))),
                        ("ks2dVal", .string(Self.text(ksStatistic))),
                        ("ks2pVal", .string(Self.text(ksPValue))),
                    ] + (insufficientData.map { [("insufficient_data", JSONValue.string($0))] } ?? [])
                        + (asNumber.map { [("as_number", JSONValue.string(String($0)))] } ?? [])
                        + (asName.map { [("as_name", JSONValue.string($0))] } ?? []))
            ),
        ]).serialized()
    }

    /// Python's `str()` of a float: the shortest round-tripping decimal (`0.5`, `1e-05`, `8.738592427329409e-13`).
    static func text(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value > 0 ? "inf" : "-inf" }
        return "\(value)"
    }

    /// Parses an analyzer answer: the result, or the server's error text.
    /// - Returns: `.success(result)` or `.failure(message)` for `{"success": false, "error": …}`.
    /// - Throws: `WeheWireError` when the body is not an analyzer answer at all.
    public static func parse(_ body: [UInt8]) throws(WeheWireError) -> Result<SingleResult, AnalyzerFailure> {
        let root = try JSONValue.parse(body)
        guard case .bool(let success)? = root["success"] else {
            throw WeheWireError(.unexpectedStructure, "analyzer answer has no boolean 'success'", field: "success")
        }
        guard success else { return .failure(AnalyzerFailure(root)) }
        guard let response = root["response"], case .object = response else {
            throw WeheWireError(.unexpectedStructure, "analyzer answer has no 'response' object", field: "response")
        }
        func string(_ key: String) throws(WeheWireError) -> String {
            switch response[key] {
            case .string(let text)?: return text
            case .number(_, let text)?: return text
            default: throw WeheWireError(.unexpectedStructure, "result has no '\(key)'", field: key)
            }
        }
        func number(_ key: String) throws(WeheWireError) -> Double {
            let text = try string(key)
            guard let value = Double(text) ?? (text == "nan" ? .nan : nil) else {
                throw WeheWireError(.invalidValue, "'\(key)' is not a number: '\(text.prefix(32))'", field: key)
            }
            return value
        }
        func integer(_ key: String) throws(WeheWireError) -> Int {
            let text = try string(key)
            guard let value = Int(text) else {
                throw WeheWireError(.invalidValue, "'\(key)' is not an integer: '\(text.prefix(32))'", field: key)
            }
            return value
        }
        return .success(
            SingleResult(
                replayName: try string("replayName"),
                date: (try? string("date")) ?? "",
                userID: try string("userID"),
                extraString: (try? string("extraString")) ?? "",
                historyCount: try integer("historyCount"),
                testID: try integer("testID"),
                areaTest: try number("area_test"),
                ks2RatioTest: try number("ks2_ratio_test"),
                originalMeanMbps: try number("xput_avg_original"),
                controlMeanMbps: try number("xput_avg_test"),
                ksStatistic: try number("ks2dVal"),
                ksPValue: try number("ks2pVal"),
                insufficientData: (try? string("insufficient_data")).flatMap { $0.isEmpty ? nil : $0 },
                asNumber: (try? string("as_number")).flatMap { UInt32($0) },
                asName: (try? string("as_name")).flatMap {
                    $0.isEmpty ? nil : String($0.prefix(ASTable.maximumNameLength))
                }
            )
        )
    }
}

/// An analyzer `{"success": false, …}` answer.
public struct AnalyzerFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `error` text (or the first other text field, e.g. `missing`).
    public var message: String

    /// Creates a failure.
    public init(message: String) {
        self.message = message
    }

    init(_ root: JSONValue) {
        if case .string(let text)? = root["error"] {
            message = text
        } else if case .object(let members) = root, let text = members.first(where: { $0.0 != "success" }) {
            message = "\(text.0): \(text.1.serialized())"
        } else {
            message = "unknown error"
        }
    }

    /// `{"success": false, "error": "<message>"}`.
    public var body: String {
        JSONValue.object([("success", .bool(false)), ("error", .string(message))]).serialized()
    }

    /// Whether the result is simply not ready yet.
    public var isNotReady: Bool { message == "No result found" }

    /// The message.
    public var description: String { message }
}
