import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small helpers for terminal output.
enum Terminal {
    /// The descriptor on which a live progress line is drawn and not yet ended by a newline (`ProgressRenderer`).
    static let openLine = Mutex<Int32?>(nil)

    /// Writes `text` (one line or several) to standard error, on lines of its own: a live progress line still open
    /// is ended first, so that the message never continues the bar. On a terminal (or with `COLUMNS` set) each line
    /// is wrapped at word boundaries to the width, continuation lines indented by `indent`.
    static func printError(_ text: String, indent: String = "  ") {
        endOpenLine()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let wrapped = columns(STDERR_FILENO).map { width in
            lines.map { $0.isEmpty ? $0 : wrap($0, width: width, indent: indent) }
        }
        let output = (wrapped ?? lines).joined(separator: "\n") + "\n"
        _ = output.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }

    /// Ends a live progress line left open (the bar stays as it was last drawn).
    static func endOpenLine() {
        let open = openLine.withLock { line in
            let descriptor = line
            line = nil
            return descriptor
        }
        guard let descriptor = open else { return }
        _ = write(descriptor, "\n", 1)
    }

    /// The width to wrap text written to `descriptor`: the terminal's columns, else `COLUMNS` when set (a pipe),
    /// else `nil` (no wrapping: a pipe or file gets one line per message, for tools that read lines).
    static func columns(_ descriptor: Int32) -> Int? {
        if isatty(descriptor) == 1 {
            var size = winsize()
            let status = withUnsafeMutablePointer(to: &size) { ioctl(descriptor, UInt(TIOCGWINSZ), $0) }
            if status == 0, size.ws_col >= 20 { return Int(size.ws_col) }
        }
        if let value = getenv("COLUMNS").flatMap({ Int(String(cString: $0)) }), value >= 20 { return value }
        return isatty(descriptor) == 1 ? 80 : nil
    }

    /// Whether standard output is a terminal (then colours and live progress are used).
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Renders rows as a left-aligned text table with a header rule.
    static func table(header: [String], rows: [[String]], rightAligned: Set<Int> = []) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: max(0, widths[index] - cell.count))
                return rightAligned.contains(index) ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var lines = [render(header), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
        lines += rows.map(render)
        return lines.joined(separator: "\n")
    }

    /// Formats a byte count as B / kB / MB (decimal units).
    static func bytes(_ count: Int) -> String {
        if count >= 1_000_000 { return format(Double(count) / 1_000_000, decimals: 2) + " MB" }
        if count >= 1_000 { return format(Double(count) / 1_000, decimals: 1) + " kB" }
        return "\(count) B"
    }

    /// Fixed-point formatting without Foundation.
    static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (abs(value) * scale).rounded()
        let integer = Int(rounded / scale)
        let fraction = Int(rounded - Double(integer) * scale)
        let sign = value < 0 && rounded != 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(integer) }
        let fractionText = String(fraction)
        return sign + String(integer) + "." + String(repeating: "0", count: decimals - fractionText.count)
            + fractionText
    }
}

extension Terminal {
    /// Fixed-point formatting in the language's convention: a decimal comma in French ("19,2"), a point in English.
    static func format(_ value: Double, decimals: Int, language: Strings.Language) -> String {
        let text = format(value, decimals: decimals)
        return language == .fr ? text.replacingPoint(with: ",") : text
    }

    /// A KS p-value as people read it: "< 0.001" below a thousandth, else three significant decimals.
    static func pValue(_ value: Double, language: Strings.Language) -> String {
        guard value.isFinite, value >= 0 else { return "n/a" }
        if value < 0.001 { return "< " + format(0.001, decimals: 3, language: language) }
        return format(value, decimals: 3, language: language)
    }
}

extension Terminal {
    /// `text` cut to `width` characters, ending with "…" when cut.
    static func truncated(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(0, width - 1))) + "…"
    }

    /// Word-wraps `text` to lines of at most `width` characters (a longer word stands alone); lines after the first
    /// start with `indent`.
    static func wrap(_ text: String, width: Int = 80, indent: String = "  ") -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let candidate = line.isEmpty ? (lines.isEmpty ? "" : indent) + word : line + " " + word
            if candidate.count > width, !line.isEmpty {
                lines.append(line)
                line = indent + word
            } else {
                line = candidate
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// The string with every "." replaced.
    func replacingPoint(with replacement: Character) -> String {
        String(map { $0 == "." ? replacement : $0 })
    }

    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
