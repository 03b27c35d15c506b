internal import Foundation

/// An IPv4 or IPv6 address parsed from text, optionally with a `/prefix` suffix; used to anonymise client addresses.
struct IPAddress: Hashable {
    /// The address family.
    enum Family: Hashable {
        case v4
        case v6
    }

    /// The family; IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) count as IPv4.
    let family: Family
    /// 4 bytes for IPv4, 16 for IPv6, network order.
    let bytes: [UInt8]
    /// The prefix length written after `/`, if any.
    let prefixLength: Int?

    /// Parses `a.b.c.d`, IPv6 text (with `::`, embedded IPv4, brackets or a `%zone`), with an optional `/prefix`.
    init?(parsing text: String) {
        var body = Substring(text.trimmingWhitespace())
        var prefix: Int?
        if let slash = body.firstIndex(of: "/") {
            guard let value = Int(body[body.index(after: slash)...]), value >= 0 else { return nil }
            prefix = value
            body = body[..<slash]
        }
        if body.hasPrefix("["), body.hasSuffix("]") {
            body = body.dropFirst().dropLast()
        }
        if let percent = body.firstIndex(of: "%") {
            body = body[..<percent]
        }
        if let v4 = IPAddress.parseIPv4(body) {
            guard prefix.map({ $0 <= 32 }) ?? true else { return nil }
            self.init(family: .v4, bytes: v4, prefixLength: prefix)
        } else if let v6 = IPAddress.parseIPv6(body) {
            guard prefix.map({ $0 <= 128 }) ?? true else { return nil }
            if v6[0..<10].allSatisfy({ $0 == 0 }), v6[10] == 0xff, v6[11] == 0xff {
                let mappedPrefix = prefix.map { max(0, $0 - 96) }
                self.init(family: .v4, bytes: Array(v6[12..<16]), prefixLength: mappedPrefix)
            } else {
                self.init(family: .v6, bytes: v6, prefixLength: prefix)
            }
        } else {
            return nil
        }
    }

    private init(family: Family, bytes: [UInt8], prefixLength: Int?) {
        self.family = family
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// The address with every bit after the first `prefix` bits cleared.
    func masked(to prefix: Int) -> IPAddress {
        var result = bytes
        for index in result.indices {
            let bitsKept = max(0, min(8, prefix - index * 8))
            let mask: UInt8 = bitsKept == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bitsKept))
            result[index] &= mask
        }
        return IPAddress(family: family, bytes: result, prefixLength: prefixLength)
    }

    /// Text form; `/prefix` is appended unless the prefix covers the whole address.
    func formatted(prefix: Int) -> String {
        let full = family == .v4 ? 32 : 128
        let address = family == .v4 ? bytes.map(String.init).joined(separator: ".") : IPAddress.formatIPv6(bytes)
        return prefix >= full ? address : "\(address)/\(prefix)"
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var result: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCIIDigit), let value = UInt8(part) else {
                return nil
            }
            result.append(value)
        }
        return result
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard !piece.isEmpty, piece.count <= 4, let value = UInt16(piece, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        var all: [UInt16]
        if halves.count == 2 {
            guard let head = groups(halves[0]), let tail = groups(halves[1]), head.count + tail.count <= 7 else {
                return nil
            }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let only = groups(halves[0]), only.count == 8 else { return nil }
            all = only
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// RFC 5952 text: lower-case hex, the longest run (≥ 2) of zero groups written as `::`.
    private static func formatIPv6(_ bytes: [UInt8]) -> String {
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                let length = index - runStart
                if length > bestLength {
                    bestStart = runStart
                    bestLength = length
                }
                runStart = -1
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestLength >= 2 else { return hex.joined(separator: ":") }
        let head = hex[0..<bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
        return "\(head)::\(tail)"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    fileprivate func trimmingWhitespace() -> Substring {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
