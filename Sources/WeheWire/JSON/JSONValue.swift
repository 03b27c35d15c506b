/// A parsed JSON value (used for small documents such as catalogs and our server-trace format; replay traces use
/// the streaming `ClientTraceDecoder` instead).
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number, with its source text kept so integers and exact spellings survive.
    case number(Double, text: String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; keys keep their order of appearance.
    case object([(String, JSONValue)])

    /// Member lookup for objects (first occurrence).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// A short type name for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Equality (objects compare members in order).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a, _), .number(let b, _)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Hashing consistent with equality.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value, _): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let members):
            for (key, value) in members {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }

    /// Parses a whole JSON document.
    /// - Throws: `WeheWireError` `.malformedJSON` with the byte offset.
    public static func parse(_ bytes: [UInt8]) throws(WeheWireError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(WeheWireError) -> JSONValue in
            var scanner = JSONScanner(buffer)
            let value = try scanner.parseValue(depth: 0)
            try scanner.expectEnd()
            return value
        }
    }

    /// Serialises compactly with `", "` and `": "` separators (the style of Python's `json.dumps`).
    public func serialized() -> String {
        var out = ""
        write(into: &out)
        return out
    }

    func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(_, let text): out += text
        case .string(let value): JSONText.appendQuoted(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += ", " }
                value.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += ", " }
                JSONText.appendQuoted(key, to: &out)
                out += ": "
                value.write(into: &out)
            }
            out += "}"
        }
    }
}

/// Helpers to write JSON text.
public enum JSONText {
    /// Appends `value` as a JSON string literal (quotes, backslash and control characters escaped).
    public static func appendQuoted(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// The shortest text that reads back as the same `Double` (`0.011766`, `14.0`, `1e-05`), as Python's `repr`.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        return "\(value)"
    }

    /// A JSON number for a `Double` that prints whole values without a fraction (`100`, `0.12`), as Java's org.json.
    public static func compactNumber(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
