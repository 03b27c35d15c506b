public import Foundation
import NIOSSL
import Synchronization
import WeheCore

/// Asks a locate service (M-Lab locate v2 or a compatible one) for Wehe replay servers:
/// `GET <locate-url>/v2/nearest/wehe/replay[?site=…]`, with the system's trust store plus the configured CA and
/// host-name checks, bounded by the configured timeout. Honours `next_request`: before its `nbf` the previous
/// answer is reused and the service is not asked; between `nbf` and `exp` its `url` is asked.
public struct FleetLocator: Sendable {
    /// The fleet configuration.
    public let configuration: FleetConfiguration

    /// Creates a locator.
    public init(configuration: FleetConfiguration) {
        self.configuration = configuration
    }

    /// The URL a first call asks: the nearest (or priority) path, the sites, and the client's name, version and
    /// operating system (`client_*`, which locate copies into every service URL and labels its rate limits by).
    public var requestURL: String {
        var base = configuration.locateURL
        while base.hasSuffix("/") { base.removeLast() }
        let path =
            configuration.priorityToken == nil ? FleetConfiguration.locatePath : FleetConfiguration.priorityLocatePath
        let query = configuration.sites.map { ("site", $0) } + Self.identity
        return base + path + "?" + query.map { "\($0)=\(Self.encode($1))" }.joined(separator: "&")
    }

    /// The `client_*` parameters of every locate call.
    static var identity: [(String, String)] {
        [
            ("client_name", FleetConfiguration.clientName), ("client_version", WeheVersion.number),
            ("client_os", FleetConfiguration.clientOS),
        ]
    }

    static func encode(_ value: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// `url` with the `client_*` parameters it does not carry yet (a `next_request` URL names its own query).
    static func identified(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        var items = components.queryItems ?? []
        let present = Set(items.map(\.name))
        for (name, value) in identity where !present.contains(name) {
            items.append(URLQueryItem(name: name, value: value))
        }
        components.queryItems = items
        return components.string ?? url
    }

    /// Finds servers.
    /// - Parameters:
    ///   - previous: the last answer for the same request, when one is known (it may forbid a new call yet).
    ///   - now: the current time.
    /// - Returns: the answer; `reused` when `previous` was returned without asking.
    /// - Throws: `FleetError` (`.locateUnreachable`, `.locateTimedOut`, `.locateRefused`, `.locateEmpty`,
    ///   `.locateMalformed`, `.locateRateLimited`, `.invalidConfiguration`).
    public func locate(previous: LocateAnswer? = nil, now: Date = Date()) async throws(FleetError) -> LocateAnswer {
        let base = requestURL
        var url = base
        if let previous, previous.requestURL == base, let next = previous.nextRequest {
            if now < next.notBefore {
                var again = previous
                again.reused = true
                return again
            }
            if now < next.expires { url = Self.identified(next.url) }
        }
        let endpoint = try Endpoint(url: url)
        let tls = try endpoint.secure ? Self.webTLS(additionalPEM: configuration.additionalTrustPEM) : nil
        let http = HTTPClient(
            tls: tls, connectTimeout: configuration.locateTimeout, requestTimeout: configuration.locateTimeout)
        let headers = configuration.priorityToken.map { [(name: "Authorization", value: "Bearer \($0)")] } ?? []
        let response: HTTPClient.Response
        do {
            response = try await http.request(
                method: .GET, host: endpoint.host, port: endpoint.port, path: endpoint.target, headers: headers,
                what: "the locate service")
        } catch {
            switch error.code {
            case .serverStoppedAnswering:
                throw FleetError(
                    .locateTimedOut,
                    "locate: \(url) did not answer within \(configuration.locateTimeout.wholeSeconds) s")
            case .cancelled: throw FleetError(.locateTimedOut, "locate: cancelled")
            default: throw FleetError(.locateUnreachable, "locate: \(error.message) (\(url))")
            }
        }
        guard (200..<300).contains(response.status) else {
            var reason = "HTTP \(response.status)"
            if let answer = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                let error = answer["error"] as? [String: Any]
            {
                reason += " (\(LocateAnswer.describe(error: error)))"
            }
            if response.status == 429 {
                let retry = Self.retryAfter(response.headers.first(name: "Retry-After"), now: now)
                throw FleetError(
                    .locateRateLimited,
                    "locate: rate-limited by M-Lab (\(reason) from \(url)), try again after "
                        + (retry.map { "\(ISO8601DateFormatter().string(from: $0)) (Retry-After)" }
                            ?? "a while: locate allows about \(configuration.locateRequestsPerHour) calls an hour "
                            + "per address and User-Agent"))
            }
            if response.status == 401, configuration.priorityToken != nil {
                throw FleetError(
                    .locateRefused,
                    "locate: the priority token was refused (\(reason) from \(url)); check --locate-token-file, "
                        + "or leave it out to ask without priority")
            }
            throw FleetError(.locateRefused, "locate: \(url) answered \(reason)")
        }
        do {
            return try LocateAnswer.parse(response.body, requestURL: base, receivedAt: now)
        } catch {
            throw FleetError(error.code, "locate: \(error.message)")
        }
    }

    /// When a `Retry-After` value (seconds or an HTTP date) allows the next call.
    static func retryAfter(_ value: String?, now: Date) -> Date? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return now.addingTimeInterval(TimeInterval(seconds)) }
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return format.date(from: value)
    }

    /// Contexts already built, by extra CA (loading the system's roots takes a while: one context serves the locate
    /// call and every envelope of a process).
    private static let contexts = Mutex<[String: NIOSSLContext]>([:])

    /// A TLS client context for web services (locate, envelopes): the system's roots plus `additionalPEM`, host
    /// names checked.
    static func webTLS(additionalPEM: String?) throws(FleetError) -> NIOSSLContext {
        let key = additionalPEM ?? ""
        if let known = contexts.withLock({ $0[key] }) { return known }
        let context = try makeWebTLS(additionalPEM: additionalPEM)
        contexts.withLock { $0[key] = context }
        return context
    }

    private static func makeWebTLS(additionalPEM: String?) throws(FleetError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let additionalPEM {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMBytes(Array(additionalPEM.utf8))
            } catch {
                throw FleetError(.invalidConfiguration, "the locate CA file is not a PEM certificate")
            }
            guard !certificates.isEmpty else {
                throw FleetError(.invalidConfiguration, "the locate CA file contains no PEM certificate")
            }
            configuration.additionalTrustRoots = [.certificates(certificates)]
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw FleetError(.invalidConfiguration, "cannot set up TLS for the locate service: \(error)")
        }
    }
}

/// A URL split for a connection: scheme security, host, port, request target.
struct Endpoint: Sendable, Hashable {
    var secure: Bool
    var host: String
    var port: Int
    var target: String

    init(url: String) throws(FleetError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw FleetError(.invalidConfiguration, "'\(url)' is not a URL")
        }
        switch scheme {
        case "https", "wss": secure = true
        case "http", "ws": secure = false
        default: throw FleetError(.invalidConfiguration, "'\(url)': unsupported scheme \(scheme)")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        self.target = target
    }
}

extension Duration {
    /// Whole seconds (rounded up), for messages.
    var wholeSeconds: Int64 {
        let parts = components
        return parts.seconds + (parts.attoseconds > 0 ? 1 : 0)
    }
}
