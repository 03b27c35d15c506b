/// The dashboard's words in each language, looked up by key from templates (`{{t.history_title}}`) and code.
///
/// Both tables hold the same keys (a test checks it). Values are plain text: templates escape them.
package struct Strings: Sendable {
    /// The language of this table.
    package let language: Language
    /// Key to text.
    package let table: [String: String]

    /// The table of `language`.
    package init(_ language: Language) {
        self.language = language
        self.table = language == .french ? Self.allFrench : Self.allEnglish
    }

    /// The text of `key` (the key itself if missing, so a gap is visible rather than blank).
    package subscript(_ key: String) -> String { table[key] ?? key }

    /// The text of `key` with `{name}` placeholders replaced.
    package func format(_ key: String, _ values: [String: String]) -> String {
        var text = self[key]
        for (name, value) in values {
            text = text.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return text
    }
}
