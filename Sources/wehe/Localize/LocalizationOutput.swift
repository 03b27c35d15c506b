import WeheClient
import WeheCore
import WeheWire

/// The `--json` object of a localization and its plain-words lines.
enum LocalizationOutput {
    /// One JSON object: `kind` `"localization"`, `test`, `localization` (the verdict), `reason`, servers (and on a
    /// fleet the located machines, `fleetServers`), history counts, each server's verdict and the statistics that
    /// server 1 returned.
    static func json(_ result: LocalizationResult) -> String {
        func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .number(value, text: JSONText.compactNumber(value))
        }
        func integer(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        func flag(_ value: Bool?) -> JSONValue { value.map(JSONValue.bool) ?? .null }
        let reason: JSONValue =
            result.reason.map {
                .object([("code", .string($0.code.rawValue)), ("message", .string($0.message))])
            } ?? .null
        let members: [(String, JSONValue)] = [
            ("kind", .string("localization")),
            ("test", .string(result.test)),
            ("replay", .string(result.replayName)),
            ("localization", .string(result.verdict.rawValue)),
            ("reason", reason),
            ("servers", .array(result.servers.map(JSONValue.string))),
            (
                "fleetServers",
                .array(
                    result.fleetServers.map { target in
                        .object([
                            ("machine", .string(target.machine)), ("city", target.city.map(JSONValue.string) ?? .null),
                            ("country", target.country.map(JSONValue.string) ?? .null),
                        ])
                    })
            ),
            ("sharedNetworks", result.sharedNetworks.map(JSONValue.string) ?? .null),
            ("historyCounts", .array(result.historyCounts.map(integer))),
            ("singleServer", .string(result.singleServer)),
            ("singleHistoryCount", integer(result.singleHistoryCount)),
            ("serverVerdicts", .array(result.serverSummaries.map { .string($0.verdict.rawValue) })),
            ("throughputSimilar", flag(result.throughputSimilar)),
            ("lossCorrelated", flag(result.lossCorrelated)),
            ("mwuPValue", number(result.summary?.mwuPValue)),
            ("simultaneousMeansMbps", .array((result.summary?.simultaneousMeansMbps ?? []).map { number($0) })),
            ("singleMeanMbps", number(result.summary?.singleMeanMbps)),
            ("correlationPValues", .array((result.summary?.correlationPValues ?? []).map { number($0) })),
            ("durationSeconds", number(result.durationSeconds)),
        ]
        return JSONValue.object(members).serialized()
    }

    /// The verdict in plain words, then the detail of a reason.
    static func lines(_ result: LocalizationResult, strings: Strings) -> [String] {
        var lines = [
            "\(result.test): " + strings.localizationLine(result.verdict.rawValue, reason: result.reason?.code.rawValue)
        ]
        if let reason = result.reason { lines.append("  \(strings.detail): \(reason.message)") }
        return lines
    }
}
