import Foundation
import Logging
import WeheAnalysis
import WeheCore
import WeheStore
import WeheWire

/// The analyzer's `/Results` commands (protocol.md 9 and 12), independent of HTTP: parameters in, status and JSON
/// body out. Every answer is a JSON object with a boolean `success`; failures carry `error` (or the reference's
/// `missing` / `value error` keys for absent or malformed parameters).
struct AnalyzerAPI: Sendable {
    let context: ServerContext

    /// An answer: HTTP status and JSON text.
    struct Answer: Sendable, Equatable {
        var status: Int
        var body: String
    }

    /// Who is asking, as far as the fleet is concerned.
    enum Caller: Sendable, Equatable {
        /// Another server of our fleet (its request carried a valid fleet signature).
        case fleetMember
        /// Anyone else; the reason says why the request is not a fleet member's.
        case anonymous(reason: String)
    }

    var store: any ResultStore { context.configuration.store }

    private var dpi: DPIService {
        DPIService(
            store: store, catalogue: context.catalogue, now: context.configuration.now, analyzer: context.analysis,
            limits: context.dpiLimits)
    }

    /// Answers one request from `clientAddress` (the socket peer).
    func answer(
        parameters: [String: String],
        clientAddress: String,
        caller: Caller = .anonymous(reason: "no fleet credentials")
    ) async -> Answer {
        guard let command = parameters["command"] else { return failure("command not provided") }
        do {
            switch command {
            case "analyze": return try await analyze(parameters)
            case "singleResult": return try await singleResult(parameters)
            case "defaultSetting":
                return Answer(
                    status: 200,
                    body: #"{"success": true, "areaThreshold": "0.5", "ks2Threshold": "0.01", "ks2Ratio": "0.95"}"#)
            case "getServers": return getServers(parameters, clientAddress: clientAddress)
            case "localize": return try await localize(parameters, clientAddress: clientAddress)
            case "localizeResult": return try await localizeResult(parameters)
            case "getMeasurements": return try await measurements(parameters, caller: caller)
            case DatagramReceipt.command: return try await udpLoss(parameters, clientAddress: clientAddress)
            case DPIMessages.analysisCommand, DPIMessages.ruleCommand, DPIMessages.resetCommand:
                return Answer(await dpi.answer(command, parameters, clientAddress: clientAddress))
            default: return failure("unknown command")
            }
        } catch let error as ParameterError {
            return error.answer
        } catch {
            context.logger.error(
                "analyzer request failed", metadata: ["wehe.command": "\(command)", "wehe.error": "\(error)"])
            return Answer(status: 500, body: Self.object([("success", .bool(false)), ("error", .string("\(error)"))]))
        }
    }

    // MARK: commands

    private func analyze(_ parameters: [String: String]) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        guard testID >= 1 else { return failure("testID must be at least 1 (the replay compared with testID 0)") }
        let key = TestKey(userID: userID, historyCount: historyCount)
        guard let record = try await store.test(key) else {
            return failure("No test found for userID \(userID) and historyCount \(historyCount)")
        }
        guard record.replay(0) != nil, record.replay(testID) != nil else {
            return failure("Test \(key) lacks the samples of testID 0 or \(testID)")
        }
        // Started here, computed on the analysis threads; the answer waits a little, the result goes to singleResult.
        if let (_, analysis) = try await context.analysis.result(
            for: key, comparedTestID: testID, waitingAtMost: Self.analysisWait)
        {
            context.metrics.verdict(analysis.summary.verdict.rawValue)
        }
        return Answer(status: 200, body: #"{"success": true}"#)
    }

    /// How long `analyze` and `singleResult` wait for an analysis being computed before answering without it.
    static let analysisWait: Duration = .seconds(5)

    private func singleResult(_ parameters: [String: String]) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        let key = TestKey(userID: userID, historyCount: historyCount)
        // An analysis not done within `analysisWait` (queued behind others, or refused for now) answers "No result
        // found": the clients ask again.
        guard testID >= 1,
            let (record, analysis) = try await context.analysis.result(
                for: key, comparedTestID: testID, waitingAtMost: Self.analysisWait)
        else {
            return notFound
        }
        let summary = analysis.summary
        var result = SingleResult(
            replayName: record.replay(testID)?.replayName ?? record.metadata.replayName,
            date: Self.dateText(record.metadata.startedAt),
            userID: userID,
            extraString: record.metadata.extraString ?? "extraString",
            historyCount: historyCount,
            testID: testID,
            areaTest: summary.areaTest,
            ks2RatioTest: summary.ks2RatioTest,
            originalMeanMbps: summary.originalMeanMbps,
            controlMeanMbps: summary.controlMeanMbps,
            ksStatistic: summary.ksStatistic,
            ksPValue: summary.ksPValue,
            asNumber: record.metadata.asNumber.flatMap { UInt32(exactly: $0) },
            asName: record.metadata.asName
        )
        if let reason = summary.insufficientDataReason {
            Self.markInsufficient(&result, reason: reason)
        }
        return Answer(status: 200, body: result.responseBody)
    }

    /// The answer for a test whose samples cannot support a verdict (too few measurements). The published clients
    /// decide from `area_test` and `ks2pVal` alone, and with the true numbers of an empty pair (area 0, p 1) they
    /// would show "no differentiation". So the answer carries `area_test` ±1 (the sign of the true area; +1 when it
    /// is 0) and `ks2pVal` 1: under both published rules (Android/cmdline and iOS) |area| reaches every area
    /// threshold and p never passes the KS criterion, which is their "inconclusive, try again" (and their
    /// confirmation run). The reason travels in our extension key `insufficient_data`; the means are the true ones;
    /// the store keeps the true statistics.
    static func markInsufficient(_ result: inout SingleResult, reason: String) {
        result.areaTest = result.areaTest < 0 ? -1 : 1
        result.ksPValue = 1
        result.insufficientData = reason
    }

    /// The pairs for the asking client: by its `clientIP` parameter when that is an address (the published handler
    /// reads it), else by the request's source address; longest matching prefix first, then the default pairs.
    /// Site pairs (`server-site-pairs`, for clients of the M-Lab fleet) and address pairs (`server-ip-pairs`) are
    /// matched separately, each list in the published format `[first, second, networks]`.
    private func getServers(_ parameters: [String: String], clientAddress: String) -> Answer {
        let claimed = parameters["clientIP"].map { $0.trimmingCharacters(in: .whitespaces) }
        let client = claimed.flatMap { AddressText.isIPAddress($0) ? $0 : nil } ?? clientAddress
        func listed(_ configured: [LocalizationPair]) -> [JSONValue] {
            LocalizationPair.matching(configured, clientAddress: client).map { pair in
                JSONValue.array([.string(pair.first), .string(pair.second), .string(pair.label)])
            }
        }
        let sites = listed(context.configuration.localizationSitePairs)
        let addresses = listed(context.configuration.localizationServerPairs)
        guard !sites.isEmpty || !addresses.isEmpty else { return failure("No Y-topology found.") }
        return Answer(
            status: 200,
            body: Self.object([
                ("success", .bool(true)),
                ("response", .object([("server-site-pairs", .array(sites)), ("server-ip-pairs", .array(addresses))])),
            ])
        )
    }

    /// The client's report of the datagrams of a UDP replay that arrived (`DatagramReceipt`): with the server's log
    /// of what it sent, the replay's loss timeline, stored as the `TCP_INFO` timelines of TCP replays are.
    private func udpLoss(_ parameters: [String: String], clientAddress: String) async throws -> Answer {
        let userID = try Self.userID(parameters)
        let historyCount = try Self.integer(parameters, "historyCount")
        let testID = try Self.integer(parameters, "testID")
        guard let text = parameters["received"] else { throw ParameterError.missing("received") }
        guard let received = DatagramReceipt.decode(text) else {
            throw ParameterError.value(
                "received must be 8 hex digits per datagram, at most \(DatagramReceipt.maximumDatagrams) datagrams")
        }
        let key = ReplayKey(userID: userID, historyCount: historyCount, testID: testID)
        let record: ReplayLossRecord
        do throws(UDPSendLogs.Refusal) {
            record = try context.udpSendLogs.report(
                key, received: received, from: AddressText.normalized(clientAddress),
                recordedAt: context.configuration.now())
        } catch {
            return failure(error.message)
        }
        try await store.save(loss: record)
        context.udpSendLogs.forget(key)
        let lost = record.samples.reduce(0) { $0 + ($1.bytesLost > 0 ? 1 : 0) }
        return Answer(
            status: 200,
            body: Self.object([
                ("success", .bool(true)),
                ("datagrams", .number(Double(record.samples.count), text: "\(record.samples.count)")),
                ("lost", .number(Double(lost), text: "\(lost)")),
            ]))
    }

    // MARK: helpers

    var notFound: Answer { failure("No result found") }

    func failure(_ message: String) -> Answer {
        Answer(status: 200, body: AnalyzerFailure(message: message).body)
    }

    struct ParameterError: Error {
        var answer: Answer
        static func missing(_ name: String) -> ParameterError {
            ParameterError(
                answer: Answer(
                    status: 200, body: object([("success", .bool(false)), ("missing", .string("'\(name)'"))])))
        }
        static func value(_ message: String) -> ParameterError {
            ParameterError(
                answer: Answer(
                    status: 200, body: object([("success", .bool(false)), ("value error", .string(message))])))
        }
    }

    static func userID(_ parameters: [String: String]) throws(ParameterError) -> String {
        guard let value = parameters["userID"] else { throw .missing("userID") }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard IDDeclaration.isValidUserID(trimmed) else { throw .value("userID is not a valid user id") }
        return trimmed
    }

    static func integer(_ parameters: [String: String], _ name: String) throws(ParameterError) -> Int {
        guard let value = parameters[name] else { throw .missing(name) }
        guard let number = Int(value.trimmingCharacters(in: .whitespaces)), number >= 0 else {
            throw .value("invalid literal for int() with base 10: '\(value.prefix(20))'")
        }
        return number
    }

    static func jsonObject(_ parameters: [String: String], _ name: String) throws(ParameterError) -> JSONValue {
        guard let value = parameters[name] else { throw .missing(name) }
        guard let parsed = try? JSONValue.parse(Array(value.utf8)), case .object = parsed else {
            throw .value("\(name) is not a JSON object")
        }
        return parsed
    }

    static func intValue(_ value: JSONValue) -> Int? {
        switch value {
        case .string(let text): Int(text)
        case .number(let number, _): Int(exactly: number)
        default: nil
        }
    }

    static func stringValue(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(_, let text): text
        default: nil
        }
    }

    static func number(_ value: Double) -> JSONValue {
        value.isFinite ? .number(value, text: "\(value)") : .string("\(value)")
    }

    static func object(_ members: [(String, JSONValue)]) -> String { JSONValue.object(members).serialized() }

    /// `YYYY-MM-DD HH:MM:SS` in UTC.
    static func dateText(_ date: Date) -> String {
        var seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(year)-\(two(month))-\(two(day)) \(two(seconds / 3600)):\(two(seconds % 3600 / 60)):\(two(seconds % 60))"
    }
}
