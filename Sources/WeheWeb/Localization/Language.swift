import Foundation

/// A language the dashboard speaks.
package enum Language: String, Sendable, Hashable, Codable, CaseIterable {
    /// English.
    case english = "en"
    /// French.
    case french = "fr"

    /// The language's own name (`English`, `Français`).
    package var nativeName: String {
        switch self {
        case .english: "English"
        case .french: "Français"
        }
    }

    /// The language chosen for a request: a known `?lang=` value wins, then the first known language of
    /// `Accept-Language` by quality, then `fallback`. Unknown or malformed values are ignored (a preference,
    /// not an error).
    package static func negotiate(query: String?, acceptLanguage: String?, fallback: Language) -> Language {
        if let query, let chosen = match(query) { return chosen }
        guard let acceptLanguage else { return fallback }
        var best: (language: Language, quality: Double, position: Int)?
        for (position, part) in acceptLanguage.split(separator: ",").prefix(32).enumerated() {
            let fields = part.split(separator: ";")
            guard let tag = fields.first, let language = match(String(tag)) else { continue }
            var quality = 1.0
            for field in fields.dropFirst() {
                let pair = field.trimmingCharacters(in: .whitespaces)
                if pair.hasPrefix("q="), let value = Double(pair.dropFirst(2)), value.isFinite {
                    quality = min(1, max(0, value))
                }
            }
            guard quality > 0 else { continue }
            if best == nil || quality > (best?.quality ?? 0) {
                best = (language, quality, position)
            }
        }
        return best?.language ?? fallback
    }

    /// The language of a tag such as `fr`, `fr-CA`, `en_GB` (case-insensitive), if supported.
    package static func match(_ tag: String) -> Language? {
        let primary =
            tag.trimmingCharacters(in: .whitespaces).lowercased()
            .split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map(String.init) ?? ""
        return Language(rawValue: primary)
    }
}
