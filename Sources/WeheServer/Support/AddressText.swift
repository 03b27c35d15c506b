#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Spelling of client addresses: the form used as registry keys, in grants and in `WHATSMYIPMAN` answers.
package enum AddressText {
    /// `::ffff:1.2.3.4` → `1.2.3.4`; other addresses unchanged (lowercased).
    package static func normalized(_ address: String) -> String {
        let lower = address.lowercased()
        if lower.hasPrefix("::ffff:"), isIPv4(String(lower.dropFirst(7))) { return String(lower.dropFirst(7)) }
        return lower
    }

    /// Whether the text is an IPv4 or IPv6 literal.
    package static func isIPAddress(_ text: String) -> Bool { isIPv4(text) || isIPv6(text) }

    /// Whether the text is a dotted-quad IPv4 literal.
    package static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return text.withCString { inet_pton(AF_INET, $0, &address) } == 1
    }

    /// Whether the text is an IPv6 literal.
    package static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return text.withCString { inet_pton(AF_INET6, $0, &address) } == 1
    }

    /// The address bytes of an IPv4 (4 bytes) or IPv6 (16 bytes) literal, IPv4-mapped IPv6 given as IPv4; `nil`
    /// for anything else.
    package static func bytes(_ text: String) -> [UInt8]? {
        let text = normalized(text)
        var v4 = in_addr()
        if text.withCString({ inet_pton(AF_INET, $0, &v4) }) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if text.withCString({ inet_pton(AF_INET6, $0, &v6) }) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether the address is an IPv4 or IPv6 loopback address.
    package static func isLoopback(_ text: String) -> Bool {
        text.hasPrefix("127.") || text == "::1"
    }

    /// The network an address counts against for per-network caps: its /24 (IPv4) or /64 (IPv6), as
    /// `a.b.c.0/24` or hex `/64`; text that is no address is its own network.
    package static func network(_ text: String) -> String {
        guard let bytes = bytes(text) else { return text }
        if bytes.count == 4 { return "\(bytes[0]).\(bytes[1]).\(bytes[2]).0/24" }
        return bytes.prefix(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "/64"
    }

    /// The IPv6 /48 an address counts against for the per-site cap (hex, `/48`); `nil` for IPv4 and non-addresses.
    package static func site(_ text: String) -> String? {
        guard let bytes = bytes(text), bytes.count == 16 else { return nil }
        return bytes.prefix(6).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "/48"
    }

    /// An address safe for logs: the last IPv4 octet or the IPv6 interface part hidden (ARCHITECTURE.md 6).
    package static func redacted(_ text: String) -> String {
        if isIPv4(text), let dot = text.lastIndex(of: ".") { return text[..<dot] + ".x" }
        if isIPv6(text) { return text.split(separator: ":").prefix(3).joined(separator: ":") + "::x" }
        return "?"
    }
}
