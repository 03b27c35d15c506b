import Foundation
import WeheClient
import WeheCore
import WeheStore
import WeheWire

extension ResultRecord.Value {
    /// The value as our JSON text writer takes it (numbers in their shortest form, non-finite ones as `null`).
    var json: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .integer(let value): .number(Double(value), text: String(value))
        case .number(let value): value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        case .string(let value): .string(value)
        case .array(let values): .array(values.map(\.json))
        case .object(let members): .object(members.map { ($0.0, $0.1.json) })
        }
    }
}

extension ResultRecord {
    /// The members as JSON values, in the record's order.
    var jsonMembers: [(String, JSONValue)] { fields.map { ($0.0, $0.1.json) } }

    /// One line of JSON text.
    var jsonText: String { JSONValue.object(jsonMembers).serialized() }

    /// The record of a test `wehe run` (or `wehe demo`) just ran on `server`.
    init(run result: TestResult, server: String?) {
        self.init(
            historyCount: result.historyCount, date: result.startedAt, test: result.test, name: result.name,
            replay: result.replayName)
        controlReplay = result.controlReplayName
        self.server = server
        provider = result.network.displayName
        asNumber = result.network.asNumber.map(Int.init)
        asName = result.network.asName
        asSource = result.network.asSource?.rawValue
        linkKind = result.network.linkKind.rawValue
        clientVersion = WeheVersion.number
        analysis = result.summary
        // `null` for a replay that was not measured (no sample), so that it is not read as a measured 0; a blocked
        // port keeps its 0, which is what was found.
        let blocked = result.verdict == .blocked
        originalMeanMbps =
            result.originalSamples.count == 0 && !blocked ? nil : result.summary.originalMeanMbps
        controlMeanMbps = result.controlSamples.count == 0 && !blocked ? nil : result.summary.controlMeanMbps
        firstVerdict = result.firstVerdict
        confirmed = result.confirmed
        durationSeconds = result.durationSeconds
        bytes = result.bytesReceived
        replaysCutShort = result.replaysCutShort.map { $0 == .original ? "original" : "control" }
        timeLimitNote = result.timeLimitNote
        sensitive = result.sensitive
        sensitiveShown = result.sensitiveSummary
    }
}
