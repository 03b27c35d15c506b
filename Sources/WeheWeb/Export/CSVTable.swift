/// A CSV document (RFC 4180): a header row and data rows, every field quoted when needed. Text that a
/// spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) is prefixed with `'`.
package struct CSVTable: Sendable {
    /// Column names.
    package var header: [String]
    /// Rows of cells; a cell is text or a number.
    package var rows: [[Cell]]

    /// A cell.
    package enum Cell: Sendable, Hashable {
        /// Text from the store or a label (guarded against formulas).
        case text(String)
        /// An integer.
        case integer(Int)
        /// A number (`nil` prints an empty cell).
        case number(Double?)
    }

    /// Creates a table.
    package init(header: [String], rows: [[Cell]] = []) {
        self.header = header
        self.rows = rows
    }

    /// The CSV text with CRLF line ends.
    package var rendered: String {
        var lines = [header.map(Self.quote).joined(separator: ",")]
        for row in rows {
            lines.append(
                row.map { cell in
                    switch cell {
                    case .text(let text): Self.quote(Self.defused(text))
                    case .integer(let value): String(value)
                    case .number(let value): value.map { $0.isFinite ? String($0) : "" } ?? ""
                    }
                }.joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private static func defused(_ text: String) -> String {
        guard let first = text.first, "=+-@\t\r".contains(first) else { return text }
        return "'" + text
    }

    private static func quote(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
