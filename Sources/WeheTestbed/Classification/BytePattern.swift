/// Byte patterns for the classifier: parsing from text and searching a byte string.
package enum BytePattern {
    /// Parses a pattern written as text (its UTF-8 bytes) or, with a `hex:` prefix, as hexadecimal digits
    /// (`hex:160301`, spaces and `|` allowed between bytes).
    package static func parse(_ text: String) throws(WeheTestbedError) -> [UInt8] {
        guard text.hasPrefix("hex:") else {
            guard !text.isEmpty else { throw WeheTestbedError(.invalidArgument, "empty pattern") }
            return Array(text.utf8)
        }
        let digits = text.dropFirst(4).filter { $0 != " " && $0 != "|" }
        guard !digits.isEmpty, digits.count % 2 == 0 else {
            throw WeheTestbedError(.invalidArgument, "'\(text)': a hex pattern needs an even, non-zero digit count")
        }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else {
                throw WeheTestbedError(.invalidArgument, "'\(text)': '\(digits[index..<next])' is not a hex byte")
            }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// Whether `pattern` occurs in `haystack` at a start position at or after `from`.
    package static func occurs(_ pattern: [UInt8], in haystack: [UInt8], from: Int = 0) -> Bool {
        guard let first = pattern.first, pattern.count <= haystack.count else { return false }
        var start = max(0, from)
        let lastStart = haystack.count - pattern.count
        while start <= lastStart {
            // Find the next candidate by its first byte, then compare the rest.
            guard let candidate = haystack[start...lastStart].firstIndex(of: first) else { return false }
            var matched = true
            for offset in 1..<pattern.count where haystack[candidate + offset] != pattern[offset] {
                matched = false
                break
            }
            if matched { return true }
            start = candidate + 1
        }
        return false
    }
}
