import Foundation
import WeheWire

/// JSON written the way the reference server's Python writes it (`json.dumps` defaults): `", "` and `": "`
/// separators, keys in insertion order, non-ASCII escaped as `\uXXXX`, floats as Python's `repr` (the shortest text
/// that reads back the same double, `0.0` for zero) and integers without a fraction.
enum ArchiveJSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)
    case array([ArchiveJSON])
    case object([(String, ArchiveJSON)])

    /// A number the reference passed through from the client's JSON: the Java client prints integral values without a
    /// fraction (org.json), so Python read them as integers and wrote `0`, not `0.0`.
    static func clientNumber(_ value: Double) -> ArchiveJSON {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 { return .int(Int(value)) }
        return .float(value)
    }

    static func optionalString(_ value: String?) -> ArchiveJSON { value.map(ArchiveJSON.string) ?? .null }

    /// The value of a client-sent JSON value, numbers as Python would re-serialise them.
    static func from(_ value: JSONValue) -> ArchiveJSON {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .number(let number, let text):
            let integral = !text.contains(where: { ".eE".contains($0) })
            if integral, let integer = Int(text) { return .int(integer) }
            return .float(number)
        case .string(let text): return .string(text)
        case .array(let values): return .array(values.map(from))
        case .object(let members): return .object(members.map { ($0.0, from($0.1)) })
        }
    }

    func serialized() -> String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .int(let value): out += String(value)
        case .float(let value): out += Self.pythonRepr(value)
        case .string(let text): Self.quote(text, into: &out)
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
                Self.quote(key, into: &out)
                out += ": "
                value.write(into: &out)
            }
            out += "}"
        }
    }

    /// Python's `repr(float)`: shortest round-trip digits; exponent form below 1e-4 and from 1e16, written
    /// `1e-05` / `1e+16`. Non-finite values (which Python would write as the non-JSON `NaN`) become `null`.
    static func pythonRepr(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
        let magnitude = abs(value)
        if magnitude >= 1e-4, magnitude < 1e16 {
            var text = "\(value)"
            if text.contains("e") {
                // Swift switches to exponent form earlier than Python (from 2^53): write the digits out.
                text = String(format: "%.1f", value)
            }
            return text
        }
        // Exponent form: Swift writes `1e-05` and `1e+16` as Python does.
        return "\(value)"
    }

    private static func quote(_ text: String, into out: inout String) {
        out += "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        out += "\""
    }
}
