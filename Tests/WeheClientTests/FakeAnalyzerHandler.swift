import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore
import WeheTestKit
import WeheWire

/// The analyzer: `analyze` → success; `singleResult` → not ready N times, then means and area from the uploads.
final class FakeAnalyzerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let server: FakeWeheServer
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head else { return }
            let query = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            var parameters = FormParameters.parse(query)
            for (key, value) in FormParameters.parse(String(decoding: body, as: UTF8.self)) where parameters[key] == nil
            {
                parameters[key] = value
            }
            respond(context, answer(parameters))
        }
    }

    private func answer(_ parameters: [String: String]) -> String {
        switch parameters["command"] {
        case "analyze":
            server.state.withLock { $0.analyzeRequests.append(parameters) }
            return #"{"success": true}"#
        case "singleResult":
            let userID = parameters["userID"] ?? ""
            let historyCount = Int(parameters["historyCount"] ?? "") ?? -1
            return server.state.withLock { state -> String in
                state.resultQueries += 1
                if state.answered.contains(historyCount) { state.queriesAfterSuccess += 1 }
                if let gate = server.behaviour.resultGate, gate.holds() {
                    return AnalyzerFailure(message: "No result found").body
                }
                if state.notReadyLeft > 0 {
                    state.notReadyLeft -= 1
                    return AnalyzerFailure(message: "No result found").body
                }
                let uploads = state.uploads.filter { $0.declaration.historyCount == historyCount }
                guard let originalSamples = uploads.last(where: { $0.declaration.testID == 0 })?.samples,
                    let controlSamples = uploads.last(where: { $0.declaration.testID == 1 })?.samples
                else { return AnalyzerFailure(message: "No result found").body }
                let original = server.behaviour.meansMbps?.original ?? originalSamples.meanMbps ?? 0
                let control = server.behaviour.meansMbps?.control ?? controlSamples.meanMbps ?? 0
                state.answered.insert(historyCount)
                state.notReadyLeft = server.behaviour.notReadyAnswers
                let larger = max(original, control)
                let area = server.behaviour.areaTest ?? (larger > 0 ? (control - original) / larger : 0)
                return SingleResult(
                    replayName: uploads.last?.declaration.replayName ?? "", date: "2026-01-01 00:00:00",
                    userID: server.behaviour.analyzerUserID ?? userID, extraString: "0", historyCount: historyCount,
                    testID: 1, areaTest: area, ks2RatioTest: 1, originalMeanMbps: original, controlMeanMbps: control,
                    ksStatistic: 0.2, ksPValue: server.behaviour.ksPValue,
                    insufficientData: server.behaviour.insufficientData
                ).responseBody
            }
        case "getServers":
            server.state.withLock { $0.getServersQueries += 1 }
            guard let pair = server.behaviour.serverPair else {
                return AnalyzerFailure(message: "No Y-topology found.").body
            }
            let items = pair.map { JSONValue.string($0) }
            return JSONValue.object([
                ("success", .bool(true)),
                (
                    "response",
                    .object([("server-site-pairs", .array([])), ("server-ip-pairs", .array([.array(items)]))])
                ),
            ]).serialized()
        case "localize":
            server.state.withLock { $0.localizeRequests.append(parameters) }
            return server.behaviour.localizeAnswer
        case "localizeResult":
            let notReady = server.state.withLock { state -> Bool in
                state.localizeResultQueries.append(parameters)
                return state.localizeResultQueries.count <= server.behaviour.localizationNotReady
            }
            if notReady { return AnalyzerFailure(message: "No result found").body }
            switch server.behaviour.localization {
            case .never: return AnalyzerFailure(message: "No result found").body
            case .raw(let body): return body
            case .ready(let mwuPValue, let correlationPValues):
                let counts = (parameters["historyCounts"] ?? "").filter { $0.isNumber || $0 == "," }
                    .split(separator: ",").map { JSONValue.number(Double($0) ?? -1, text: String($0)) }
                var tests: [JSONValue] = []
                var response: [(String, JSONValue)] = [
                    ("userID", .string(parameters["userID"] ?? "")), ("historyCounts", .array(counts)),
                    ("testID", .string("0")),
                ]
                if let mwuPValue {
                    tests.append(.string("pairsum_vs_single_xput"))
                    response.append(
                        (
                            "pairsum_vs_single_xput",
                            .object([
                                ("mwuVal", .number(4100, text: "4100.0")),
                                ("mwuPVal", .number(mwuPValue, text: String(mwuPValue))),
                                ("simReplaysAvgXput", .array([.number(1, text: "1.0"), .number(1.1, text: "1.1")])),
                                ("simReplaySumAvgXput", .number(2.1, text: "2.1")),
                                ("singleReplayAvgXput", .number(2, text: "2.0")),
                            ])
                        ))
                }
                if let correlationPValues {
                    tests.append(.string("loss_correlation"))
                    response.append(
                        (
                            "loss_correlation",
                            .object([
                                (
                                    "intervalSizes",
                                    .array(
                                        correlationPValues.indices.map {
                                            .number(0.1 * Double($0 + 1), text: String(0.1 * Double($0 + 1)))
                                        })
                                ),
                                ("corrPValues", .array(correlationPValues.map { .number($0, text: String($0)) })),
                                (
                                    "simReplaysAvgLoss",
                                    .array([.number(0.01, text: "0.01"), .number(0.02, text: "0.02")])
                                ),
                            ])
                        ))
                }
                response.insert(("localization_tests", .array(tests)), at: 3)
                return JSONValue.object([("success", .bool(true)), ("response", .object(response))]).serialized()
            }
        default:
            return AnalyzerFailure(message: "unknown command").body
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ text: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
