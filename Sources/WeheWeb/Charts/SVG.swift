import Foundation

/// Builds SVG markup in Swift. Every text node and attribute value goes through `escape`, so names from the
/// store (a provider called `<script>…`) cannot break out of the drawing.
package struct SVG: Sendable {
    private(set) var markup = ""

    /// Starts an empty drawing.
    package init() {}

    /// Escapes `&`, `<`, `>`, `"` and `'` for XML text and attribute values.
    package static func escape(_ text: String) -> String {
        guard text.contains(where: { $0 == "&" || $0 == "<" || $0 == ">" || $0 == "\"" || $0 == "'" }) else {
            return text
        }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    /// A coordinate with at most two decimals (`12.5`, `3`).
    package static func coordinate(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let rounded = (value * 100).rounded() / 100
        if rounded == rounded.rounded() { return String(Int(rounded)) }
        return String(format: "%.2f", rounded)
    }

    /// Opens an element with escaped attributes; `selfClosing` ends it at once.
    package mutating func open(_ name: String, _ attributes: KeyValuePairs<String, String>, selfClosing: Bool = false) {
        markup += "<" + name
        for (key, value) in attributes {
            markup += " " + key + "=\"" + Self.escape(value) + "\""
        }
        markup += selfClosing ? "/>" : ">"
    }

    /// Closes an element.
    package mutating func close(_ name: String) {
        markup += "</" + name + ">"
    }

    /// An element with escaped text content.
    package mutating func element(_ name: String, _ attributes: KeyValuePairs<String, String>, text: String) {
        open(name, attributes)
        markup += Self.escape(text)
        close(name)
    }

    /// A childless element.
    package mutating func empty(_ name: String, _ attributes: KeyValuePairs<String, String>) {
        open(name, attributes, selfClosing: true)
    }

    /// The markup so far.
    package var rendered: String { markup }
}
