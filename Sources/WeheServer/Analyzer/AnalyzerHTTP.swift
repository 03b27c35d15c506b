import Hummingbird
import NIOCore
import Prometheus
import WeheWire

/// The Hummingbird routes of the analyzer port: `/Results` (GET and POST, parameters from the query string and a
/// form body, merged as the reference server does) and `/metrics` when a Prometheus registry is configured.
enum AnalyzerHTTP {
    /// Largest request body read (a form with a few parameters is well below 1 KiB; WeHeY's JSON infos ~1 KiB).
    static let maximumBodyBytes = 64 * 1024

    static func router(api: AnalyzerAPI, metrics: PrometheusCollectorRegistry?) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            var parameters = FormParameters.parse(request.uri.query ?? "")
            var request = request
            let body = try await request.collectBody(upTo: maximumBodyBytes)
            if body.readableBytes > 0 {
                let form = FormParameters.parse(String(buffer: body))
                for (key, value) in form where parameters[key] == nil { parameters[key] = value }
            }
            let answer = await api.answer(parameters: parameters, clientAddress: "")
            return Response(
                status: HTTPResponse.Status(code: answer.status),
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: answer.body))
            )
        }
        router.get("/Results", use: handler)
        router.post("/Results", use: handler)
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
}
