import Foundation
import Hummingbird

/// What a handler needs to know about a request: its language, path and query, parsed once.
struct RequestInfo: Sendable {
    /// The negotiated language.
    let language: Language
    /// The words of that language.
    let strings: Strings
    /// Number and date formatting for that language.
    let formatter: Formatter
    /// The request path (without query).
    let path: String
    /// The query parameters in order, decoded.
    let query: [(name: String, value: String)]
    /// Whether the dashboard has a settings page (`wehe dashboard`), which the navigation then links.
    let hasSettings: Bool

    init(request: Request, configuration: DashboardConfiguration) {
        let query = Self.parseQuery(request.uri.query ?? "")
        self.query = query
        self.path = request.uri.path
        self.hasSettings = configuration.settingsEditor != nil
        let requested = query.last { $0.name == "lang" }?.value
        let language = Language.negotiate(
            query: requested, acceptLanguage: request.headers[.acceptLanguage], fallback: configuration.defaultLanguage)
        self.language = language
        self.strings = Strings(language)
        self.formatter = Formatter(language: language, timeZone: configuration.timeZone)
    }

    /// The last value of a query parameter.
    func value(_ name: String) -> String? { query.last { $0.name == name }?.value }

    /// Every value of a repeated query parameter, empty values dropped.
    func values(_ name: String) -> [String] { query.filter { $0.name == name && !$0.value.isEmpty }.map(\.value) }

    /// This page's URL in another language (other parameters kept).
    func url(language: Language) -> String {
        var items = query.filter { $0.name != "lang" }
        items.append(("lang", language.rawValue))
        return path + "?" + Self.encodeQuery(items)
    }

    /// `application/x-www-form-urlencoded` or query text to name/value pairs (`+` is a space; bad escapes kept
    /// literally).
    static func parseQuery(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).prefix(200).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                let spaced = part.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// Name/value pairs to query text.
    static func encodeQuery(_ items: [(name: String, value: String)]) -> String {
        items.map { escape($0.name) + "=" + escape($0.value) }.joined(separator: "&")
    }

    /// Percent-encodes a query component.
    static func escape(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Percent-encodes a path component.
    static func escapePath(_ text: String) -> String {
        escape(text)
    }
}
