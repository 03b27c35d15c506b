import Foundation
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
        var all = members
        if let queue = result.summary?.mergePointQueue { all.append(("mergePointQueue", mergePointQueue(queue))) }
        return JSONValue.object(all).serialized()
    }

    /// `mergePointQueue` of `--json` (only when server 1 measured it): `verdict`, `note`, and per branch (server
    /// order, `null` when not measured) the comparisons to the merge point and to the client (`pValue`,
    /// `extraDelayMs`, `significant`) and the probe counts.
    static func mergePointQueue(_ queue: MergePointQueueSummary) -> JSONValue {
        func comparison(_ value: MergePointQueueSummary.Comparison?) -> JSONValue {
            guard let value else { return .null }
            return .object([
                ("pValue", .number(value.pValue, text: JSONText.compactNumber(value.pValue))),
                (
                    "extraDelayMs",
                    .number(value.extraDelay * 1000, text: JSONText.compactNumber(value.extraDelay * 1000))
                ),
                ("significant", .bool(value.significant)),
            ])
        }
        func branch(_ value: MergePointQueueSummary.Branch?) -> JSONValue {
            guard let value else { return .null }
            return .object([
                ("mergePoint", comparison(value.mergePoint)), ("path", comparison(value.path)),
                ("flowProbes", .number(Double(value.flowProbes), text: String(value.flowProbes))),
                ("flowUnanswered", .number(Double(value.flowUnanswered), text: String(value.flowUnanswered))),
            ])
        }
        return .object([
            ("verdict", .string(queue.verdict.rawValue)),
            ("branches", .array([branch(queue.first), branch(queue.second)])),
            ("note", queue.note.map(JSONValue.string) ?? .null),
        ])
    }

    /// The merge-point signal in one line (English: a measurement detail for operators, like the JSON).
    static func mergePointLine(_ queue: MergePointQueueSummary) -> String {
        func branch(_ value: MergePointQueueSummary.Branch?) -> String {
            guard let value else { return "not measured" }
            func ms(_ seconds: Double) -> String { String(format: "%+.1f ms", seconds * 1000) }
            let path = value.path.map { "to the client \(ms($0.extraDelay)) (p \(String(format: "%.2g", $0.pValue)))" }
            return
                "to the merge point \(ms(value.mergePoint.extraDelay)) (p \(String(format: "%.2g", value.mergePoint.pValue))), "
                + (path ?? "to the client no answers")
        }
        return "merge-point queue (our extension): \(queue.verdict.rawValue); server 1 \(branch(queue.first)); "
            + "server 2 \(branch(queue.second))"
    }

    /// The verdict in plain words, then the detail of a reason.
    static func lines(_ result: LocalizationResult, strings: Strings) -> [String] {
        var lines = [
            "\(result.test): " + strings.localizationLine(result.verdict.rawValue, reason: result.reason?.code.rawValue)
        ]
        if let reason = result.reason { lines.append("  \(strings.detail): \(reason.message)") }
        if let queue = result.summary?.mergePointQueue { lines.append("  " + mergePointLine(queue)) }
        return lines
    }
}
