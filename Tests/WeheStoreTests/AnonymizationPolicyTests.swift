import Testing
import WeheStore

@Suite("AnonymizationPolicy")
struct AnonymizationPolicyTests {
    @Test(
        "default policy keeps IPv4 /24 and IPv6 /48",
        arguments: [
            ("198.51.100.77", "198.51.100.0/24"),
            (" 10.1.2.3 ", "10.1.2.0/24"),
            ("2001:db8:abcd:1234:5678::1", "2001:db8:abcd::/48"),
            ("2001:DB8:ABCD:0012::", "2001:db8:abcd::/48"),
            ("[2001:db8:1:2::3]", "2001:db8:1::/48"),
            ("fe80::1%eth0", "fe80::/48"),
            ("::ffff:203.0.113.9", "203.0.113.0/24"),
            ("::", "::/48"),
            ("198.51.100.0/20", "198.51.96.0/20"),
            ("198.51.100.0/24", "198.51.100.0/24"),
        ]
    )
    func defaults(input: String, expected: String) {
        #expect(AnonymizationPolicy.default.anonymize(input) == expected)
    }

    @Test(
        "text that is not an address is never stored",
        arguments: [
            "", "localhost", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.-4", "1::2::3", "12345::", "1.2.3.4/33",
            "::/129", "g::1", "1.2.3.4/x",
        ]
    )
    func rejects(input: String) {
        #expect(AnonymizationPolicy.default.anonymize(input) == nil)
    }

    @Test("custom prefixes, full addresses and the zero prefix")
    func custom() throws {
        let narrow = try AnonymizationPolicy(ipv4PrefixLength: 20, ipv6PrefixLength: 56)
        #expect(narrow.anonymize("198.51.100.77") == "198.51.96.0/20")
        #expect(narrow.anonymize("2001:db8:abcd:12ff::1") == "2001:db8:abcd:1200::/56")
        let full = try AnonymizationPolicy(storeFullAddress: true)
        #expect(full.anonymize("198.51.100.77") == "198.51.100.77")
        #expect(full.anonymize("2001:0db8:0000:0000:0001:0000:0000:0001") == "2001:db8::1:0:0:1")
        #expect(full.anonymize("198.51.100.0/24") == "198.51.100.0/24")
        let none = try AnonymizationPolicy(ipv4PrefixLength: 0, ipv6PrefixLength: 0)
        #expect(none.anonymize("198.51.100.77") == "0.0.0.0/0")
        #expect(AnonymizationPolicy.default.anonymize(nil) == nil)
    }

    @Test("prefix lengths out of range are configuration errors")
    func invalid() {
        #expect(throws: WeheStoreError.self) { try AnonymizationPolicy(ipv4PrefixLength: 33) }
        #expect(throws: WeheStoreError.self) { try AnonymizationPolicy(ipv6PrefixLength: -1) }
        let error = #expect(throws: WeheStoreError.self) { try AnonymizationPolicy(ipv6PrefixLength: 129) }
        #expect(error?.code == .invalidConfiguration)
    }
}
