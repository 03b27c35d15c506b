/// A WeHeY server pair answered to `getServers` (protocol.md 12 step 2), for the clients whose address lies in
/// `prefix` (any client when `prefix` is `nil`: the default).
///
/// Written in the configuration as `[<prefix>=]<address1>,<address2>,<label>`, for example
/// `198.51.100.0/24=192.0.2.10,203.0.113.20,AS64500 or AS64501` or, as the default, `192.0.2.10,203.0.113.20,AS64500`.
package struct LocalizationPair: Sendable, Hashable, CustomStringConvertible {
    /// An address prefix in CIDR notation (IPv4 or IPv6).
    package struct Prefix: Sendable, Hashable, CustomStringConvertible {
        /// The network's address bytes (4 or 16), host bits cleared.
        package let bytes: [UInt8]
        /// The prefix length in bits.
        package let length: Int

        /// Parses `address/length` (a bare address means a host prefix).
        /// - Throws: `ReplayServerError` `.invalidConfiguration` for a malformed address or length.
        package init(_ text: String) throws(ReplayServerError) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let address = AddressText.bytes(String(parts[0])) else {
                throw ReplayServerError(
                    .invalidConfiguration, "\"\(text)\" is not an address prefix (a.b.c.d/n, x::/n)")
            }
            let bits = address.count * 8
            let length = parts.count == 2 ? Int(parts[1]) : bits
            guard let length, (0...bits).contains(length) else {
                throw ReplayServerError(.invalidConfiguration, "prefix length of \"\(text)\" is outside 0…\(bits)")
            }
            self.length = length
            self.bytes = address.enumerated().map { index, byte in
                let kept = max(0, min(8, length - index * 8))
                return kept == 0 ? 0 : byte & ~UInt8(truncatingIfNeeded: (1 << (8 - kept)) - 1)
            }
        }

        /// Whether `address` (an IP literal) lies in this prefix; addresses of the other family never do.
        package func contains(_ address: String) -> Bool {
            guard let other = AddressText.bytes(address), other.count == bytes.count else { return false }
            for index in 0..<bytes.count {
                let kept = max(0, min(8, length - index * 8))
                if kept == 0 { return true }
                let mask = ~UInt8(truncatingIfNeeded: (1 << (8 - kept)) - 1)
                if other[index] & mask != bytes[index] { return false }
            }
            return true
        }

        /// `address/length`.
        package var description: String {
            let address: String
            if bytes.count == 4 {
                address = bytes.map(String.init).joined(separator: ".")
            } else {
                address = stride(from: 0, to: 16, by: 2).map {
                    String(Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]), radix: 16)
                }
                .joined(separator: ":")
            }
            return "\(address)/\(length)"
        }
    }

    /// Clients this pair serves; `nil` for every client without a more specific pair.
    package var prefix: Prefix?
    /// Address (or name) of server 1.
    package var first: String
    /// Address (or name) of server 2.
    package var second: String
    /// The shared network(s), e.g. `AS1 or AS2`.
    package var label: String

    /// Creates a pair.
    package init(prefix: Prefix?, first: String, second: String, label: String) {
        self.prefix = prefix
        self.first = first
        self.second = second
        self.label = label
    }

    /// Parses `[<prefix>=]<address1>,<address2>,<label>` (the label may contain commas).
    /// - Throws: `ReplayServerError` `.invalidConfiguration` naming the problem.
    package init(parsing text: String) throws(ReplayServerError) {
        var rest = Substring(text)
        var prefix: Prefix?
        if let equals = rest.firstIndex(of: "=") {
            prefix = try Prefix(String(rest[..<equals]).trimmingSpaces)
            rest = rest[rest.index(after: equals)...]
        }
        let parts = rest.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map {
            String($0).trimmingSpaces
        }
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ReplayServerError(
                .invalidConfiguration,
                "localization pair \"\(text)\" is not [prefix=]address1,address2,label")
        }
        self.init(prefix: prefix, first: parts[0], second: parts[1], label: parts[2])
    }

    /// Parses an M-Lab site pair `[<prefix>=]<site1>,<site2>,<label>` (sites such as `lga03`: letters, digits,
    /// `-`, `_` and `.`, two different ones).
    /// - Throws: `ReplayServerError` `.invalidConfiguration` naming the problem.
    package init(parsingSites text: String) throws(ReplayServerError) {
        try self.init(parsing: text)
        for site in [first, second] {
            guard site.count <= 63,
                site.unicodeScalars.allSatisfy({
                    ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                        || "-_.".unicodeScalars.contains($0)
                })
            else {
                throw ReplayServerError(.invalidConfiguration, "\"\(site)\" in \"\(text)\" is not an M-Lab site name")
            }
        }
        guard first.lowercased() != second.lowercased() else {
            throw ReplayServerError(.invalidConfiguration, "site pair \"\(text)\" names the same site twice")
        }
    }

    /// `[prefix=]first,second,label`.
    package var description: String { (prefix.map { "\($0)=" } ?? "") + "\(first),\(second),\(label)" }

    /// The pairs for a client: those of the longest prefix containing `clientAddress`, else the default pairs
    /// (without a prefix), else none.
    package static func matching(_ pairs: [LocalizationPair], clientAddress: String?) -> [LocalizationPair] {
        if let clientAddress {
            let containing = pairs.filter { $0.prefix?.contains(clientAddress) == true }
            if let longest = containing.compactMap(\.prefix?.length).max() {
                return containing.filter { $0.prefix?.length == longest }
            }
        }
        return pairs.filter { $0.prefix == nil }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }
}
