/// An IP address as bits, for prefix matching: IPv4 in the low 32 bits of a `UInt32`, IPv6 in a `UInt128`.
/// IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) are read as IPv4, since that is the network they come from.
public enum IPAddressBits: Sendable, Hashable {
    /// An IPv4 address.
    case v4(UInt32)
    /// An IPv6 address.
    case v6(UInt128)

    /// Parses an address literal: dotted IPv4, or IPv6 with `::` compression and an optional trailing dotted
    /// IPv4 part; surrounding brackets and a `%zone` suffix are ignored. `nil` for anything else.
    public init?(_ text: String) {
        var bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "["), bytes.last == UInt8(ascii: "]") {
            bytes = Array(bytes.dropFirst().dropLast())
        }
        if let zone = bytes.firstIndex(of: UInt8(ascii: "%")) { bytes = Array(bytes[..<zone]) }
        guard let parsed = Self.parse(bytes[...]) else { return nil }
        self = parsed
    }

    /// Parses an address from bytes (no brackets, no zone).
    static func parse(_ bytes: ArraySlice<UInt8>) -> IPAddressBits? {
        guard !bytes.isEmpty, bytes.count <= 45 else { return nil }
        if bytes.contains(UInt8(ascii: ":")) {
            guard let value = parseIPv6(bytes) else { return nil }
            if value >> 32 == 0xffff { return .v4(UInt32(truncatingIfNeeded: value)) }
            return .v6(value)
        }
        return parseIPv4(bytes).map { .v4($0) }
    }

    /// Four decimal parts of at most three digits each, each at most 255.
    static func parseIPv4(_ bytes: ArraySlice<UInt8>) -> UInt32? {
        var result: UInt32 = 0
        var part: UInt32 = 0
        var digits = 0
        var parts = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, parts < 3 else { return nil }
                result = result << 8 | part
                parts += 1
                part = 0
                digits = 0
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digits += 1
                part = part * 10 + UInt32(byte - UInt8(ascii: "0"))
                guard digits <= 3, part <= 255 else { return nil }
            } else {
                return nil
            }
        }
        guard digits > 0, parts == 3 else { return nil }
        return result << 8 | part
    }

    /// Eight groups of up to four hex digits, one `::` standing for one or more zero groups, optionally ending in a
    /// dotted IPv4 address that counts as two groups.
    static func parseIPv6(_ bytes: ArraySlice<UInt8>) -> UInt128? {
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var compressed = false
        var index = bytes.startIndex
        if bytes.starts(with: [UInt8(ascii: ":"), UInt8(ascii: ":")]) {
            compressed = true
            index += 2
        } else if bytes.first == UInt8(ascii: ":") {
            return nil
        }
        while index < bytes.endIndex {
            var end = index
            while end < bytes.endIndex, bytes[end] != UInt8(ascii: ":") { end += 1 }
            let group = bytes[index..<end]
            if group.contains(UInt8(ascii: ".")) {
                // A trailing IPv4 part: the last group.
                guard end == bytes.endIndex, let v4 = parseIPv4(group) else { return nil }
                let pair = [UInt16(v4 >> 16), UInt16(truncatingIfNeeded: v4)]
                if compressed { tail += pair } else { head += pair }
                index = end
                break
            }
            guard !group.isEmpty, group.count <= 4 else { return nil }
            var value: UInt16 = 0
            for byte in group {
                guard let digit = hexValue(byte) else { return nil }
                value = value << 4 | UInt16(digit)
            }
            if compressed { tail.append(value) } else { head.append(value) }
            guard head.count + tail.count <= 8 else { return nil }
            if end == bytes.endIndex {
                index = end
                break
            }
            // `end` is a colon: a second colon right after starts the compressed run.
            if end + 1 < bytes.endIndex, bytes[end + 1] == UInt8(ascii: ":") {
                guard !compressed else { return nil }
                compressed = true
                index = end + 2
            } else {
                guard end + 1 < bytes.endIndex else { return nil }
                index = end + 1
            }
        }
        let count = head.count + tail.count
        if compressed {
            guard count <= 7 else { return nil }
        } else {
            guard count == 8 else { return nil }
        }
        let groups = head + [UInt16](repeating: 0, count: 8 - count) + tail
        var result: UInt128 = 0
        for group in groups { result = result << 16 | UInt128(group) }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
