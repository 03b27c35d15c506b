/// A byte-level JSON reader over a buffer. It never traps on malformed input: every problem throws a
/// `WeheWireError` with the byte offset. Nesting depth is limited so hostile input cannot exhaust the stack.
struct JSONScanner {
    /// Maximum nesting depth accepted.
    static let maximumDepth = 64

    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    /// The next non-whitespace byte without consuming it.
    mutating func peek() throws(WeheWireError) -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input (the file is truncated)") }
        return bytes[position]
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(WeheWireError) {
        let next = try peek()
        guard next == byte else { throw error("expected \(what), found \(describe(next))") }
        position += 1
    }

    /// Consumes `byte` if it is next; returns whether it was.
    mutating func consume(_ byte: UInt8) throws(WeheWireError) -> Bool {
        if try peek() == byte {
            position += 1
            return true
        }
        return false
    }

    /// After an element of an array or object: consumes `,` (returns true) or the closing byte (returns false).
    mutating func commaOrClose(_ close: UInt8) throws(WeheWireError) -> Bool {
        let next = try peek()
        if next == UInt8(ascii: ",") {
            position += 1
            return true
        }
        if next == close {
            position += 1
            return false
        }
        throw error("expected ',' or '\(Character(Unicode.Scalar(close)))', found \(describe(next))")
    }

    mutating func expectEnd() throws(WeheWireError) {
        skipWhitespace()
        guard position == bytes.count else {
            throw error("unexpected \(describe(bytes[position])) after the end of the document")
        }
    }

    func error(_ message: String) -> WeheWireError {
        WeheWireError(.malformedJSON, message, offset: position)
    }

    func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16)
    }

    // MARK: Strings

    /// Reads a string literal. Fast path for strings without escapes.
    mutating func parseString() throws(WeheWireError) -> String {
        try expect(UInt8(ascii: "\""), "a string")
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if byte < 0x20 { throw error("control character inside a string") }
            position += 1
        }
        throw error("unterminated string (the file is truncated)")
    }

    /// Calls `body` with the raw bytes of a string literal that contains no escapes (used for hex payloads).
    mutating func withRawString<T>(
        _ body: (UnsafeBufferPointer<UInt8>) throws(WeheWireError) -> T
    ) throws(WeheWireError) -> T {
        try expect(UInt8(ascii: "\""), "a string")
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                position += 1
                return try body(slice)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 {
                throw error("unexpected escape or control character in a hex string")
            }
            position += 1
        }
        throw error("unterminated string (the file is truncated)")
    }

    private mutating func parseEscapedString(from start: Int) throws(WeheWireError) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = Array(bytes[start..<position])
        func flush() {
            if !utf8.isEmpty {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8.removeAll(keepingCapacity: true)
            }
        }
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[position]
                position += 1
                switch escaped {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    flush()
                    var code = try parseHex4()
                    if (0xD800...0xDBFF).contains(code), position + 1 < bytes.count,
                        bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                    {
                        position += 2
                        let low = try parseHex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                    }
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default:
                    position -= 1
                    throw error("invalid escape \\\(Character(Unicode.Scalar(escaped)))")
                }
            default:
                if byte < 0x20 {
                    position -= 1
                    throw error("control character inside a string")
                }
                utf8.append(byte)
            }
        }
        throw error("unterminated string (the file is truncated)")
    }

    private mutating func parseHex4() throws(WeheWireError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = HexCodec.nibble(bytes[position]) else { throw error("invalid \\u escape") }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    // MARK: Numbers

    /// Reads a number and returns its value and exact text.
    mutating func parseNumber() throws(WeheWireError) -> (Double, String) {
        skipWhitespace()
        let start = position
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        var digits = 0
        while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
            position += 1
            digits += 1
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                position += 1
                digits += 1
            }
        }
        if digits > 0, position < bytes.count,
            bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")
        {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            var exponentDigits = 0
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                position += 1
                exponentDigits += 1
            }
            if exponentDigits == 0 { digits = 0 }
        }
        guard digits > 0, position - start <= 400 else {
            position = start
            throw error("expected a number, found \(isAtEnd ? "end of input" : describe(bytes[start]))")
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let value = Double(text) else {
            position = start
            throw error("'\(text)' is not a number")
        }
        return (value, text)
    }

    /// Reads a number that must be an integer (no fraction or exponent); returns nil if it has one.
    mutating func parseInteger() throws(WeheWireError) -> Int? {
        let (value, text) = try parseNumber()
        if let exact = Int(text) { return exact }
        if value == value.rounded(), abs(value) < 9e15 { return Int(value) }
        return nil
    }

    // MARK: Literals and generic values

    mutating func parseLiteral(_ word: String) throws(WeheWireError) -> Bool {
        skipWhitespace()
        let utf8 = Array(word.utf8)
        guard position + utf8.count <= bytes.count,
            bytes[position..<(position + utf8.count)].elementsEqual(utf8)
        else { return false }
        position += utf8.count
        return true
    }

    /// Parses any value into a `JSONValue`.
    mutating func parseValue(depth: Int) throws(WeheWireError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        let next = try peek()
        switch next {
        case UInt8(ascii: "{"):
            position += 1
            var members: [(String, JSONValue)] = []
            if try consume(UInt8(ascii: "}")) { return .object(members) }
            repeat {
                let key = try parseString()
                try expect(UInt8(ascii: ":"), "':'")
                members.append((key, try parseValue(depth: depth + 1)))
            } while try commaOrClose(UInt8(ascii: "}"))
            return .object(members)
        case UInt8(ascii: "["):
            position += 1
            var values: [JSONValue] = []
            if try consume(UInt8(ascii: "]")) { return .array(values) }
            repeat {
                values.append(try parseValue(depth: depth + 1))
            } while try commaOrClose(UInt8(ascii: "]"))
            return .array(values)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            if try parseLiteral("true") { return .bool(true) }
            if try parseLiteral("false") { return .bool(false) }
            if try parseLiteral("null") { return .null }
            throw error("unexpected \(describe(next))")
        default:
            let (value, text) = try parseNumber()
            return .number(value, text: text)
        }
    }

    /// Skips any value without building it.
    mutating func skipValue(depth: Int) throws(WeheWireError) {
        _ = try parseValue(depth: depth)
    }
}

/// Lowercase hex encoding and strict decoding.
public enum HexCodec {
    static let digits = Array("0123456789abcdef".utf8)

    /// The value of one hex digit (either case), or nil.
    @inline(__always)
    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        case 0x41...0x46: byte - 0x41 + 10
        default: nil
        }
    }

    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex text. Returns a message describing the problem instead of the bytes when it is invalid.
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], HexError> {
        guard text.count % 2 == 0 else { return .failure(.oddLength(text.count)) }
        var out = [UInt8](repeating: 0, count: text.count / 2)
        var index = 0
        while index < text.count {
            guard let high = nibble(text[index]), let low = nibble(text[index + 1]) else {
                return .failure(.notHex(index))
            }
            out[index / 2] = high << 4 | low
            index += 2
        }
        return .success(out)
    }

    /// Decodes a hex string (public convenience).
    public static func decode(_ text: String) -> [UInt8]? {
        var copy = text
        return copy.withUTF8 { buffer in try? decode(buffer).get() }
    }

    enum HexError: Error {
        case oddLength(Int)
        case notHex(Int)

        var message: String {
            switch self {
            case .oddLength(let count): "hex string has an odd number of digits (\(count))"
            case .notHex(let index): "hex string has a non-hex character at position \(index)"
            }
        }
    }
}
