public import Foundation

/// One server the locate service offers.
public struct FleetTarget: Sendable, Hashable, Codable {
    /// The machine's name (`mlab1-lga03.mlab-oti.measurement-lab.org`).
    public var machine: String
    /// City, when given.
    public var city: String?
    /// Country code, when given.
    public var country: String?
    /// The service URLs by key (the envelope URL carries its own access token).
    public var urls: [String: String]

    /// Creates a target.
    public init(machine: String, city: String? = nil, country: String? = nil, urls: [String: String] = [:]) {
        self.machine = machine
        self.city = city
        self.country = country
        self.urls = urls
    }

    /// The side-channel host: the machine name with the `wehe-` prefix (protocol.md section 10).
    public var sideChannelHost: String { FleetConfiguration.sideChannelPrefix + machine }

    /// The access envelope URL, used exactly as given.
    public var envelopeURL: String? { urls[FleetConfiguration.envelopeKey] }

    /// The site: the machine name's first label without the `mlabN-` prefix (`lga03`), when it has that form.
    public var site: String? {
        guard let label = machine.split(separator: ".").first, let dash = label.firstIndex(of: "-") else {
            return nil
        }
        let site = label[label.index(after: dash)...]
        return site.isEmpty ? nil : String(site)
    }

    /// "City, CC" or whatever part is known.
    public var place: String {
        [city, country].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ", ")
    }
}

/// When the locate service may be asked again (`next_request`): not before `notBefore`; between `notBefore` and
/// `expires`, at `url`.
public struct LocateNextRequest: Sendable, Hashable, Codable {
    /// Not before.
    public var notBefore: Date
    /// Expires.
    public var expires: Date
    /// The URL to ask then.
    public var url: String

    /// Creates a next-request hint.
    public init(notBefore: Date, expires: Date, url: String) {
        self.notBefore = notBefore
        self.expires = expires
        self.url = url
    }
}

/// A locate answer: the targets in the service's order and when to ask again.
public struct LocateAnswer: Sendable, Hashable, Codable {
    /// The targets, best first.
    public var targets: [FleetTarget]
    /// When to ask again, if the service said.
    public var nextRequest: LocateNextRequest?
    /// When the answer arrived.
    public var receivedAt: Date
    /// The URL that was asked.
    public var requestURL: String
    /// Whether this answer is an earlier one, reused because `next_request` forbade a new call yet.
    public var reused: Bool

    /// Creates an answer.
    public init(
        targets: [FleetTarget], nextRequest: LocateNextRequest?, receivedAt: Date, requestURL: String,
        reused: Bool = false
    ) {
        self.targets = targets
        self.nextRequest = nextRequest
        self.receivedAt = receivedAt
        self.requestURL = requestURL
        self.reused = reused
    }

    /// Parses a locate v2 body (`results`, `next_request`, `error`).
    /// - Throws: `FleetError` `.locateRefused` (an `error` object), `.locateEmpty` (no results) or
    ///   `.locateMalformed`.
    public static func parse(_ body: [UInt8], requestURL: String, receivedAt: Date = Date()) throws(FleetError)
        -> LocateAnswer
    {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw FleetError(.locateMalformed, "the locate service's answer is not a JSON object")
            }
            object = parsed
        } catch let error as FleetError {
            throw error
        } catch {
            throw FleetError(
                .locateMalformed, "the locate service's answer is not JSON (\(body.count) bytes from \(requestURL))")
        }
        if let error = object["error"] as? [String: Any] {
            throw FleetError(.locateRefused, "the locate service refused: \(describe(error: error))")
        }
        guard let results = object["results"], !(results is NSNull) else {
            throw FleetError(.locateEmpty, "the locate service offered no server (no results)")
        }
        guard let list = results as? [Any] else {
            throw FleetError(.locateMalformed, "the locate service's \"results\" is not a list")
        }
        var targets: [FleetTarget] = []
        for (index, item) in list.enumerated() {
            guard let entry = item as? [String: Any], let machine = entry["machine"] as? String, !machine.isEmpty
            else {
                throw FleetError(.locateMalformed, "the locate service's result \(index + 1) names no machine")
            }
            let location = entry["location"] as? [String: Any]
            guard let urls = entry["urls"] as? [String: String] else {
                throw FleetError(.locateMalformed, "the locate service's result for \(machine) has no urls")
            }
            targets.append(
                FleetTarget(
                    machine: machine, city: location?["city"] as? String, country: location?["country"] as? String,
                    urls: urls))
        }
        guard !targets.isEmpty else {
            throw FleetError(.locateEmpty, "the locate service offered no server (empty result list)")
        }
        var next: LocateNextRequest?
        if let hint = object["next_request"] as? [String: Any] {
            guard let nbf = (hint["nbf"] as? String).flatMap(parseDate),
                let exp = (hint["exp"] as? String).flatMap(parseDate),
                let url = hint["url"] as? String
            else {
                throw FleetError(.locateMalformed, "the locate service's next_request is not {nbf, exp, url}")
            }
            next = LocateNextRequest(notBefore: nbf, expires: exp, url: url)
        }
        return LocateAnswer(targets: targets, nextRequest: next, receivedAt: receivedAt, requestURL: requestURL)
    }

    /// "503 Service Unavailable: detail" from an `error` object.
    static func describe(error: [String: Any]) -> String {
        var parts: [String] = []
        if let status = error["status"] as? Int { parts.append(String(status)) }
        if let title = error["title"] as? String, !title.isEmpty { parts.append(title) }
        var text = parts.joined(separator: " ")
        if let detail = error["detail"] as? String, !detail.isEmpty {
            text += text.isEmpty ? detail : ": \(detail)"
        }
        if text.isEmpty, let type = error["type"] as? String { text = type }
        return text.isEmpty ? "an error without details" : text
    }

    /// RFC 3339 with or without fractional seconds.
    static func parseDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
