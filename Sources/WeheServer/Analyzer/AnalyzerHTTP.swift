import Foundation
import Hummingbird
import NIOCore
import Prometheus
import WeheWire

/// The request context of the analyzer routes: Hummingbird's basics plus the socket peer (for `getServers`).
struct AnalyzerRequestContext: RequestContext {
    /// Hummingbird's per-request storage.
    var coreContext: CoreRequestContextStorage
    /// The address the request came from.
    let remoteAddress: SocketAddress?
    /// The address the request came to (a fleet request must be signed for it or for the server's name).
    let localAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.localAddress = source.channel.localAddress
    }
}

/// The Hummingbird routes of the analyzer port: `/Results` (GET and POST, parameters from the query string and a
/// form body, merged as the reference server does) and `/metrics` when a Prometheus registry is configured.
enum AnalyzerHTTP {
    /// Largest request body read (a form with a few parameters is well below 1 KiB; WeHeY's JSON infos ~1 KiB).
    static let maximumBodyBytes = 64 * 1024

    static func router(
        api: AnalyzerAPI,
        metrics: PrometheusCollectorRegistry?,
        fleet: FleetAuthenticator?,
        now: @escaping @Sendable () -> Date
    ) -> Router<AnalyzerRequestContext> {
        let router = Router(context: AnalyzerRequestContext.self)
        let handler: @Sendable (Request, AnalyzerRequestContext) async throws -> Response = { request, context in
            api.context.noteResultsRequest()
            var parameters = FormParameters.parse(request.uri.query ?? "")
            var request = request
            let body = try await request.collectBody(upTo: maximumBodyBytes)
            if body.readableBytes > 0 {
                let form = FormParameters.parse(String(buffer: body))
                for (key, value) in form where parameters[key] == nil { parameters[key] = value }
            }
            let caller: AnalyzerAPI.Caller
            if let fleet {
                let target = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
                let configuration = api.context.configuration
                var ownHosts = Set(
                    ([configuration.serverName] + configuration.fleetHostNames).map(FleetAuthenticator.hostName))
                if let local = context.localAddress?.ipAddress { ownHosts.insert(AddressText.normalized(local)) }
                let check = fleet.check(
                    method: request.method.rawValue, host: request.head.authority ?? header(request, "Host"),
                    target: target, body: Array(body.readableBytesView),
                    date: header(request, FleetAuthenticator.dateHeader),
                    nonce: header(request, FleetAuthenticator.nonceHeader),
                    signature: header(request, FleetAuthenticator.signatureHeader),
                    ownHosts: ownHosts, now: now())
                switch check {
                case .member: caller = .fleetMember
                case .refused(let reason): caller = .anonymous(reason: reason)
                }
            } else {
                caller = .anonymous(reason: "this server has no fleet secret configured")
            }
            let peer = AddressText.normalized(context.remoteAddress?.ipAddress ?? "")
            let answer = await api.answer(parameters: parameters, clientAddress: peer, caller: caller)
            return Response(
                status: HTTPResponse.Status(code: answer.status),
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: answer.body))
            )
        }
        router.get("/Results", use: handler)
        router.post("/Results", use: handler)
        addClientTraceRoutes(to: router, api: api)
        // Liveness and readiness (a fleet's orchestrator): 200 while serving, 503 once draining for shutdown.
        router.get("/healthz") { _, _ -> Response in
            let draining = api.context.isDraining
            return Response(
                status: draining ? .serviceUnavailable : .ok,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status": "\#(draining ? "draining" : "ok")"}"#))
            )
        }
        if let metrics {
            router.get("/metrics") { _, _ -> Response in
                Response(
                    status: .ok,
                    headers: [.contentType: "text/plain; version=0.0.4"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer()))
                )
            }
        }
        return router
    }

    /// The value of the first header field named `name` (case-insensitive).
    static func header(_ request: Request, _ name: String) -> String? {
        let wanted = name.lowercased()
        return request.headers.first { $0.name.canonicalName == wanted }?.value
    }
}
