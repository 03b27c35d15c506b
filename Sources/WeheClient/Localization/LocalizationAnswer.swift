import WeheCore
import WeheWire

/// Server 1's answer to `localizeResult` (protocol.md section 12 item 7), read leniently: numbers may come as JSON
/// numbers or strings, either test may be absent, and values outside their range are dropped rather than trusted.
struct LocalizationAnswer: Sendable, Hashable {
    /// The throughput-sum test (`pairsum_vs_single_xput`), when present with a usable p-value.
    struct ThroughputSum: Sendable, Hashable {
        var mwuStatistic: Double?
        var mwuPValue: Double
        var simultaneousMeansMbps: [Double]
        var sumMeanMbps: Double?
        var singleMeanMbps: Double?
    }

    /// The loss-correlation test (`loss_correlation`), when present.
    struct LossCorrelation: Sendable, Hashable {
        var intervalSizes: [Double]
        var pValues: [Double]
        var averageLoss: [Double]
    }

    /// What one query returned.
    enum Reply: Sendable, Hashable {
        /// `{"success":false,"error":"No result found"}`: ask again later.
        case notReady
        /// Any other refusal, with the server's message.
        case failed(String)
        /// The result.
        case ready(LocalizationAnswer)
    }

    var userID: String
    var historyCounts: [Int]
    var throughputSum: ThroughputSum?
    var lossCorrelation: LossCorrelation?
    var note: String?
    /// Our extension `merge_point_queue` (servers with `--merge-point-probe`), when present and well formed.
    var mergePointQueue: MergePointQueueSummary?

    /// Parses one answer body.
    /// - Throws: `ReplayClientError` `.analyzerFailed` when the body is not the expected JSON.
    static func parse(_ body: [UInt8]) throws(ReplayClientError) -> Reply {
        let root: JSONValue
        do {
            root = try JSONValue.parse(body)
        } catch {
            throw ReplayClientError(.analyzerFailed, "the localization answer is not JSON")
        }
        guard case .bool(let success)? = root["success"] else {
            throw ReplayClientError(.analyzerFailed, "the localization answer has no 'success'")
        }
        guard success else {
            let message = root["error"].flatMap(text) ?? root.serialized()
            return message.lowercased().contains("no result") ? .notReady : .failed(message)
        }
        guard let response = root["response"], case .object = response else {
            throw ReplayClientError(.analyzerFailed, "the localization answer has no 'response' object")
        }
        var answer = LocalizationAnswer(
            userID: response["userID"].flatMap(text) ?? "",
            historyCounts: list(response["historyCounts"]).compactMap { $0.isFinite ? Int(exactly: $0) : nil },
            throughputSum: nil, lossCorrelation: nil, note: response["note"].flatMap(text))
        if let test = response["pairsum_vs_single_xput"], let p = test["mwuPVal"].flatMap(number), p >= 0, p <= 1 {
            answer.throughputSum = ThroughputSum(
                mwuStatistic: test["mwuVal"].flatMap(number), mwuPValue: p,
                simultaneousMeansMbps: list(test["simReplaysAvgXput"]),
                sumMeanMbps: test["simReplaySumAvgXput"].flatMap(number),
                singleMeanMbps: test["singleReplayAvgXput"].flatMap(number))
        }
        if let test = response["loss_correlation"] {
            // NaN p-values are discarded (analysis.md 6.4 step 7); anything outside [0, 1] is not a p-value.
            answer.lossCorrelation = LossCorrelation(
                intervalSizes: list(test["intervalSizes"]),
                pValues: list(test["corrPValues"]).filter { $0 >= 0 && $0 <= 1 },
                averageLoss: list(test["simReplaysAvgLoss"]))
        }
        if let queue = response["merge_point_queue"] { answer.mergePointQueue = mergePointQueue(queue) }
        return .ready(answer)
    }

    /// Reads `merge_point_queue`: a known verdict, two branches (each `null` or complete), an optional note.
    static func mergePointQueue(_ value: JSONValue) -> MergePointQueueSummary? {
        guard let verdictText = value["verdict"].flatMap(text),
            let verdict = LocalizationVerdict(rawValue: verdictText),
            case .array(let branches)? = value["branches"], branches.count == 2
        else { return nil }
        func comparison(_ value: JSONValue?) -> MergePointQueueSummary.Comparison? {
            guard let value, let p = value["pValue"].flatMap(number), p >= 0, p <= 1,
                let extra = value["extraDelay"].flatMap(number), case .bool(let significant)? = value["significant"]
            else { return nil }
            return .init(pValue: p, extraDelay: extra, significant: significant)
        }
        var parsed: [MergePointQueueSummary.Branch?] = []
        for branch in branches {
            guard branch != .null else {
                parsed.append(nil)
                continue
            }
            guard let mergePoint = comparison(branch["mergePoint"]),
                let probes = branch["flowProbes"].flatMap(number),
                let unanswered = branch["flowUnanswered"].flatMap(number),
                let flowProbes = Int(exactly: probes), let flowUnanswered = Int(exactly: unanswered)
            else { return nil }
            parsed.append(
                .init(
                    mergePoint: mergePoint, path: comparison(branch["path"]), flowProbes: flowProbes,
                    flowUnanswered: flowUnanswered))
        }
        return MergePointQueueSummary(
            first: parsed[0], second: parsed[1], verdict: verdict, note: value["note"].flatMap(text))
    }

    private static func text(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(_, let text): text
        default: nil
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        let result: Double?
        switch value {
        case .number(let number, _): result = number
        case .string(let text): result = Double(text.trimmingSpaces())
        default: result = nil
        }
        guard let result, result.isFinite else { return nil }
        return result
    }

    private static func list(_ value: JSONValue?) -> [Double] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap(number)
    }
}
