/// How client addresses are kept. By default only a network prefix is stored (IPv4 /24, IPv6 /48), never the full
/// address; the full address is kept only when `storeFullAddress` is set explicitly (a server option).
package struct AnonymizationPolicy: Sendable, Hashable, Codable {
    /// Prefix length kept for IPv4 addresses (0…32).
    package private(set) var ipv4PrefixLength: Int
    /// Prefix length kept for IPv6 addresses (0…128).
    package private(set) var ipv6PrefixLength: Int
    /// Keep full addresses (normalised) instead of prefixes.
    package private(set) var storeFullAddress: Bool

    /// The default: IPv4 /24, IPv6 /48, no full addresses.
    package static let `default` = AnonymizationPolicy(checkedIPv4: 24, ipv6: 48, storeFullAddress: false)

    private init(checkedIPv4 ipv4: Int, ipv6: Int, storeFullAddress: Bool) {
        self.ipv4PrefixLength = ipv4
        self.ipv6PrefixLength = ipv6
        self.storeFullAddress = storeFullAddress
    }

    /// Creates a policy.
    /// - Throws: `WeheStoreError` `.invalidConfiguration` when a prefix length is out of range.
    package init(ipv4PrefixLength: Int = 24, ipv6PrefixLength: Int = 48, storeFullAddress: Bool = false)
        throws(WeheStoreError)
    {
        guard (0...32).contains(ipv4PrefixLength) else {
            throw WeheStoreError(
                .invalidConfiguration,
                database: "-",
                "IPv4 prefix length \(ipv4PrefixLength) is outside 0…32"
            )
        }
        guard (0...128).contains(ipv6PrefixLength) else {
            throw WeheStoreError(
                .invalidConfiguration,
                database: "-",
                "IPv6 prefix length \(ipv6PrefixLength) is outside 0…128"
            )
        }
        self.init(checkedIPv4: ipv4PrefixLength, ipv6: ipv6PrefixLength, storeFullAddress: storeFullAddress)
    }

    /// The form of `address` that may be stored: `a.b.c.0/24`, `2001:db8:1::/48`, or the normalised full address
    /// when `storeFullAddress` is set. Input already in prefix form keeps the shorter of its and the policy's
    /// prefix. Returns `nil` for `nil` or text that is not an IP address (nothing unparsed is ever stored).
    package func anonymize(_ address: String?) -> String? {
        guard let address, let parsed = IPAddress(parsing: address) else { return nil }
        let policyPrefix: Int
        switch parsed.family {
        case .v4: policyPrefix = storeFullAddress ? 32 : ipv4PrefixLength
        case .v6: policyPrefix = storeFullAddress ? 128 : ipv6PrefixLength
        }
        let prefix = min(policyPrefix, parsed.prefixLength ?? Int.max)
        return parsed.masked(to: prefix).formatted(prefix: prefix)
    }
}
