/// Parameters of an analyzer request: the query string and an `application/x-www-form-urlencoded` body, merged
/// (protocol.md section 9.1). Values are percent-decoded and `+` is a space; a raw `@` (the Java client does not
/// encode it) is accepted as is.
public enum FormParameters {
    /// Parses `a=1&b=%40x`. Repeated keys keep their first value. Invalid percent escapes are kept literally.
    public static func parse(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = decode(parts[0])
            guard !key.isEmpty, result[key] == nil else { continue }
            result[key] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }

    /// Encodes parameters as a form body / query string, in the given order.
    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { encodeComponent($0.0) + "=" + encodeComponent($0.1) }.joined(separator: "&")
    }

    /// Percent-encodes everything except unreserved characters.
    public static func encodeComponent(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 15)]))
            }
        }
        return out
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if byte == UInt8(ascii: "%"), index + 2 < utf8.count, let high = HexCodec.nibble(utf8[index + 1]),
                let low = HexCodec.nibble(utf8[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 2
            } else {
                bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
