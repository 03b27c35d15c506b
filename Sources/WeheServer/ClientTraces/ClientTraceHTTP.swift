import Foundation
import Hummingbird
import NIOCore
import WeheWire

/// The analyzer's routes for client-brought recorded tests (our extension; the published clients never call them):
///
/// - `GET /client-traces?replayName=<name>`: `{"success": true, "known": <bool>, "accepts": <bool>,
///   "maximumBytes": <n>}`, whether this server has the test and whether it takes uploads.
/// - `POST /client-traces?userID=<id>` with the `*.pcap_client_all.json` text as the body: 200
///   `{"success": true, "replayName": ..., "expiresInSeconds": ..., "replayBytes": ...}`, or a 4xx status with
///   `{"success": false, "error": <why>}` (403 when the server does not take uploads).
///
/// The whole request must arrive within the analyzer's request timeout (the connection guard's), which bounds a slow
/// upload.
extension AnalyzerHTTP {
    /// Path of both routes.
    static let clientTracePath = "/client-traces"

    /// The refusal of a server without `--accept-client-traces`.
    static let clientTracesOff =
        "this server does not run tests it does not have; ask its operator to enable --accept-client-traces, "
        + "or run your own: wehe-server serve --replays <dir>"

    static func addClientTraceRoutes(to router: Router<AnalyzerRequestContext>, api: AnalyzerAPI) {
        router.get(RouterPath(stringLiteral: clientTracePath)) { request, _ -> Response in
            let parameters = FormParameters.parse(request.uri.query ?? "")
            let name = parameters["replayName"] ?? ""
            let store = api.context.clientTraces
            let known = api.context.catalogue.replay(named: name) != nil
            return json(
                200,
                [
                    ("success", .bool(true)), ("known", .bool(known)), ("accepts", .bool(store != nil)),
                    ("maximumBytes", number(store?.policy.maximumUploadBytes ?? 0)),
                ])
        }
        router.post(RouterPath(stringLiteral: clientTracePath)) { request, context -> Response in
            guard let store = api.context.clientTraces else { return refusal(403, clientTracesOff) }
            let parameters = FormParameters.parse(request.uri.query ?? "")
            // A body announced beyond the limit is refused before any of it is read.
            if let announced = request.headers[.contentLength].flatMap({ Int($0) }),
                announced > store.policy.maximumUploadBytes
            {
                return refusal(
                    413, "the trace is larger than this server takes (\(store.policy.maximumUploadBytes) bytes)")
            }
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: store.policy.maximumUploadBytes)
            } catch {
                return refusal(
                    413, "the trace is larger than this server takes (\(store.policy.maximumUploadBytes) bytes)")
            }
            let peer = AddressText.normalized(context.remoteAddress?.ipAddress ?? "")
            do throws(ClientTraceStore.Refusal) {
                let receipt = try store.upload(
                    Array(body.readableBytesView), userID: parameters["userID"] ?? "", address: peer)
                api.context.logger.notice(
                    "client trace held",
                    metadata: [
                        "wehe.peer": "\(AddressText.redacted(peer))", "wehe.replay.name": "\(receipt.replayName)",
                        "wehe.bytes": "\(body.readableBytes)",
                    ])
                return json(
                    200,
                    [
                        ("success", .bool(true)), ("replayName", .string(receipt.replayName)),
                        ("expiresInSeconds", number(receipt.expiresInSeconds)),
                        ("replayBytes", number(receipt.replayBytes)),
                    ])
            } catch {
                api.context.logger.notice(
                    "client trace refused",
                    metadata: ["wehe.peer": "\(AddressText.redacted(peer))", "wehe.reason": "\(error.reason)"])
                return refusal(error.status, error.reason)
            }
        }
    }

    private static func number(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }

    private static func refusal(_ status: Int, _ reason: String) -> Response {
        json(status, [("success", .bool(false)), ("error", .string(reason))])
    }

    private static func json(_ status: Int, _ members: [(String, JSONValue)]) -> Response {
        Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: JSONValue.object(members).serialized()))
        )
    }
}
