import Foundation
import HTTPTypes
import Hummingbird
import Logging
import WeheStore

/// The body of a data route: text, its content type, and a download file name when it is an attachment.
struct DataBody: Sendable {
    var text: String
    var contentType: String
    var filename: String?

    static func json(_ text: String, filename: String? = nil) -> DataBody {
        DataBody(text: text, contentType: "application/json; charset=utf-8", filename: filename)
    }

    static func csv(_ text: String, filename: String) -> DataBody {
        DataBody(text: text, contentType: "text/csv; charset=utf-8", filename: filename)
    }
}

extension Dashboard {
    /// Headers of every dashboard response: no caching, no sniffing, scripts and styles only from the dashboard.
    static func baseHeaders(contentType: String) -> HTTPFields {
        var headers: HTTPFields = [.contentType: contentType, .cacheControl: "no-store"]
        let extra = [
            (
                "content-security-policy",
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
                    + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
            ),
            ("x-content-type-options", "nosniff"),
            // No referrer leaves the dashboard; "same-origin" rather than "no-referrer", because under "no-referrer"
            // a browser sends `Origin: null` with every form post, which the same-origin check of the state-changing
            // routes (new test, settings) must refuse.
            ("referrer-policy", "same-origin"),
        ]
        for (name, value) in extra {
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        return headers
    }

    /// An HTML page: builds it, or renders the error page with the right status when building fails.
    func page(
        _ request: Request, operatorPage: Bool, _ build: (RequestInfo) async throws -> String
    ) async -> Response {
        let info = RequestInfo(request: request, configuration: configuration)
        if operatorPage, let refusal = operatorLoginRefusal(request) { return refusal }
        do {
            try checkHost(request, operatorPage: operatorPage)
            let html = try await build(info)
            return Response(
                status: .ok, headers: Self.baseHeaders(contentType: "text/html; charset=utf-8"),
                body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
        } catch {
            return errorPage(translate(error, request: request), info: info, operatorPage: operatorPage)
        }
    }

    /// A JSON or CSV route: builds the body, or answers with a JSON error and the right status.
    func data(
        _ request: Request, operatorPage: Bool, _ build: (RequestInfo) async throws -> DataBody
    ) async -> Response {
        let info = RequestInfo(request: request, configuration: configuration)
        if operatorPage, let refusal = operatorLoginRefusal(request) { return refusal }
        do {
            try checkHost(request, operatorPage: operatorPage)
            let body = try await build(info)
            var headers = Self.baseHeaders(contentType: body.contentType)
            if let filename = body.filename, let field = HTTPField.Name("content-disposition") {
                headers[field] = "attachment; filename=\"\(filename)\""
            }
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body.text)))
        } catch {
            return errorJSON(translate(error, request: request))
        }
    }

    /// A JSON error body `{"error":{"code":…,"message":…}}`.
    func errorJSON(_ error: WeheWebError) -> Response {
        struct Payload: Encodable {
            struct Body: Encodable {
                var code: String
                var status: Int
                var message: String
            }
            var error: Body
        }
        let payload = Payload(
            error: .init(code: error.code.description, status: error.statusCode, message: error.message))
        let text = (try? JSONEncoder().encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return Response(
            status: HTTPResponse.Status(code: error.statusCode),
            headers: Self.baseHeaders(contentType: "application/json; charset=utf-8"),
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The error page: status, title and message in the request's language; never a stack trace.
    func errorPage(_ error: WeheWebError, info: RequestInfo, operatorPage: Bool) -> Response {
        struct Content {
            var status: Int
            var heading: String
            var message: String
            var homeHref: String
        }
        let strings = info.strings
        let status = error.statusCode
        let message: String
        switch status {
        case 404 where error.message.isEmpty: message = strings["error_404_message"]
        case 500: message = strings["error_500_message"]
        default: message = error.message
        }
        let base = operatorPage ? configuration.operatorPath : configuration.personPath
        let heading = strings.table["error_title_\(status)"] ?? strings["error_title_500"]
        let context = PageContext(
            chrome: Chrome(info: info, title: heading, basePath: base, operatorLinks: operatorPage, section: .none),
            t: strings.table,
            page: Content(
                status: status, heading: heading, message: message, homeHref: base + "/?lang=" + info.language.rawValue)
        )
        let html =
            (try? renderer.render("error", context))
            ?? "<!doctype html><title>\(status)</title><p>\(SVG.escape(heading))</p>"
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: Self.baseHeaders(contentType: "text/html; charset=utf-8"),
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// Maps any error to a `WeheWebError`, logging server-side failures with their cause.
    func translate(_ error: any Error, request: Request) -> WeheWebError {
        let result: WeheWebError
        if let web = error as? WeheWebError {
            result = web
        } else if let store = error as? WeheStoreError {
            result =
                store.code == .notFound
                ? WeheWebError(.notFound, "", underlying: store)
                : WeheWebError(
                    .storeUnavailable, "The result database is not available right now (\(store.code)).",
                    underlying: store)
        } else {
            result = WeheWebError(.computationFailed, "", underlying: error)
        }
        if result.statusCode >= 500 {
            configuration.logger.error(
                "dashboard request failed",
                metadata: [
                    "wehe.web.path": "\(request.uri.path)", "wehe.web.status": "\(result.statusCode)",
                    "wehe.web.error": "\(result.underlying.map { String(describing: $0) } ?? result.message)",
                ])
        }
        return result
    }

    /// Refuses requests whose Host header is not an allowed one (DNS-rebinding guard), on every page.
    func checkHost(_ request: Request, operatorPage: Bool) throws(WeheWebError) {
        guard let allowed = configuration.allowedHosts else { return }
        let host = (request.head.authority ?? HTTPField.Name("host").flatMap { request.headers[$0] } ?? "").lowercased()
        guard allowed.contains(host) || allowed.contains(Self.hostName(host)) else {
            throw WeheWebError(.forbidden, "This dashboard only answers requests addressed to its own local address.")
        }
    }

    /// A 401 answer when the operator pages need a token and the request does not carry it; `nil` when it may
    /// go on.
    func operatorLoginRefusal(_ request: Request) -> Response? {
        guard let token = configuration.operatorToken else { return nil }
        let authorization = HTTPField.Name("authorization").flatMap { request.headers[$0] } ?? ""
        if authorization.hasPrefix("Bearer "), Self.constantTimeEqual(String(authorization.dropFirst(7)), token) {
            return nil
        }
        if authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let colon = decoded.firstIndex(of: UInt8(ascii: ":")),
            Self.constantTimeEqual(String(decoding: decoded[decoded.index(after: colon)...], as: UTF8.self), token)
        {
            return nil
        }
        var headers = Self.baseHeaders(contentType: "text/plain; charset=utf-8")
        if let field = HTTPField.Name("www-authenticate") { headers[field] = #"Basic realm="wehe operator""# }
        return Response(
            status: .unauthorized, headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: "The operator pages need the operator token.\n")))
    }

    /// Compares two secrets in time that does not depend on where they differ.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        var difference = left.count ^ right.count
        for index in 0..<max(left.count, right.count) {
            let x = index < left.count ? left[index] : 0
            let y = index < right.count ? right[index] : 0
            difference |= Int(x ^ y)
        }
        return difference == 0
    }

    /// The host of a Host header without its port (`127.0.0.1:8080` → `127.0.0.1`, `[::1]:80` → `[::1]`).
    static func hostName(_ authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[...end])
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 2 ? String(parts[0]) : authority
    }

    /// A static file from the resources, or 404.
    func staticFile(_ name: String) -> Response {
        guard let asset = renderer.assets[name] else {
            return Response(
                status: .notFound, headers: Self.baseHeaders(contentType: "text/plain; charset=utf-8"),
                body: ResponseBody(byteBuffer: ByteBuffer(string: "not found")))
        }
        var headers = Self.baseHeaders(contentType: asset.contentType)
        headers[.cacheControl] = "public, max-age=3600"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }
}
