import Testing
import WeheServer
import WeheWire

/// WeHeY server pairs per client prefix: parsing, longest-prefix matching (IPv4 and IPv6) with a default, and
/// `getServers` answering from them.
@Suite("WeHeY server pairs", .timeLimit(.minutes(5)))
struct LocalizationPairTests {
    static func pairs() throws -> [LocalizationPair] {
        try [
            "192.0.2.1,192.0.2.2,default pair",
            "10.0.0.0/8=10.9.0.1,10.9.0.2,AS64500",
            "10.1.0.0/16=10.1.0.1,10.1.0.2,AS64501 or AS64502",
            "10.1.0.0/16=10.1.0.3,10.1.0.4,AS64503",
            "2001:db8::/32=2001:db8::10,2001:db8::20,AS64510",
            "127.0.0.0/24=127.0.0.1,127.0.0.2,loopback pair",
        ].map { try LocalizationPair(parsing: $0) }
    }

    @Test(
        "the longest prefix containing the client wins; other clients get the default",
        arguments: [
            ("10.1.2.3", ["AS64501 or AS64502", "AS64503"]),
            ("10.200.0.1", ["AS64500"]),
            ("::ffff:10.3.3.3", ["AS64500"]),
            ("2001:db8:1::5", ["AS64510"]),
            ("2001:db9::5", ["default pair"]),
            ("198.51.100.7", ["default pair"]),
            ("not an address", ["default pair"]),
        ])
    func matching(client: String, labels: [String]) throws {
        #expect(LocalizationPair.matching(try Self.pairs(), clientAddress: client).map(\.label) == labels)
    }

    @Test("without a default pair, a client outside every prefix gets none")
    func noDefault() throws {
        let pairs = try Self.pairs().filter { $0.prefix != nil }
        #expect(LocalizationPair.matching(pairs, clientAddress: "198.51.100.7").isEmpty)
    }

    @Test("prefixes keep only their network bits and print back in CIDR form")
    func prefixes() throws {
        let v4 = try LocalizationPair.Prefix("10.1.255.7/12")
        #expect(v4.description == "10.0.0.0/12")
        #expect(v4.contains("10.15.0.1"))
        #expect(!v4.contains("10.16.0.1"))
        #expect(try LocalizationPair.Prefix("0.0.0.0/0").contains("203.0.113.9"))
        #expect(!(try LocalizationPair.Prefix("0.0.0.0/0").contains("2001:db8::1")))
        #expect(try LocalizationPair.Prefix("198.51.100.7").length == 32)
        let v6 = try LocalizationPair.Prefix("2001:db8:abcd:12ff::1/52")
        #expect(v6.contains("2001:db8:abcd:1000::99"))
        #expect(!v6.contains("2001:db8:abcd:2000::1"))
        #expect(try LocalizationPair(parsing: " 10.0.0.0/8 = a , b , x, y").description == "10.0.0.0/8=a,b,x, y")
    }

    @Test(
        "malformed pairs are configuration errors naming the text",
        arguments: [
            "10.0.0.1,10.0.0.2", "=10.0.0.1,10.0.0.2,x", "10.0.0.0/33=a,b,c", "300.1.1.1/8=a,b,c",
            "2001:db8::/129=a,b,c", "10.0.0.0/8/1=a,b,c", ",b,label", "10.0.0.0/x=a,b,c",
        ])
    func malformed(text: String) {
        let error = #expect(throws: ReplayServerError.self) { _ = try LocalizationPair(parsing: text) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("getServers answers by the clientIP parameter, else by the request's source address")
    func getServers() async throws {
        let pairs = try Self.pairs()
        let withPairs: (inout ReplayServerConfiguration) -> Void = { $0.localizationServerPairs = pairs }
        try await ServerHarness.run(configure: withPairs) { server in
            let port = try #require(server.ports.analyzerPlain)
            func ipPairs(_ path: String) async throws -> JSONValue? {
                let body = try await HTTPProbe.request(port: port, path: path)
                return try JSONValue.parse(Array(body.utf8))["response"]?["server-ip-pairs"]
            }
            #expect(
                try await ipPairs("/Results?command=getServers")
                    == .array([.array([.string("127.0.0.1"), .string("127.0.0.2"), .string("loopback pair")])]))
            #expect(
                try await ipPairs("/Results?command=getServers&clientIP=10.77.0.1")
                    == .array([.array([.string("10.9.0.1"), .string("10.9.0.2"), .string("AS64500")])]))
            #expect(
                try await ipPairs("/Results?command=getServers&clientIP=2001:db8::7")
                    == .array([.array([.string("2001:db8::10"), .string("2001:db8::20"), .string("AS64510")])]))
        }
        let onlyPrefixed = try Self.pairs().filter { $0.prefix?.length == 8 }
        let withPrefixedPairs: (inout ReplayServerConfiguration) -> Void = { $0.localizationServerPairs = onlyPrefixed }
        try await ServerHarness.run(configure: withPrefixedPairs) { server in
            let port = try #require(server.ports.analyzerPlain)
            let body = try await HTTPProbe.request(port: port, path: "/Results?command=getServers")
            #expect(body == #"{"success": false, "error": "No Y-topology found."}"#)
        }
    }

    @Test("site pairs: answered in server-site-pairs in the published format, matched per client; never askable")
    func sitePairs() async throws {
        let sites = try [
            "lga03,ord02,AS64500 or AS64501", "10.0.0.0/8=tst01,tst02,AS64502",
        ].map { try LocalizationPair(parsingSites: $0) }
        let configure: (inout ReplayServerConfiguration) -> Void = { $0.localizationSitePairs = sites }
        try await ServerHarness.run(configure: configure) { server in
            let port = try #require(server.ports.analyzerPlain)
            // Exactly the published shape, so the published WeHeY clients read it (protocol.md 12 step 2).
            let body = try await HTTPProbe.request(port: port, path: "/Results?command=getServers")
            #expect(
                body
                    == #"{"success": true, "response": {"server-site-pairs": [["lga03", "ord02", "AS64500 or AS64501"]], "server-ip-pairs": []}}"#
            )
            let prefixed = try await HTTPProbe.request(
                port: port, path: "/Results?command=getServers&clientIP=10.2.3.4")
            #expect(
                prefixed
                    == #"{"success": true, "response": {"server-site-pairs": [["tst01", "tst02", "AS64502"]], "server-ip-pairs": []}}"#
            )
        }
        // Both kinds configured: both lists answered, each matched on its own.
        let both: (inout ReplayServerConfiguration) -> Void = {
            $0.localizationSitePairs = sites
            $0.localizationServerPairs = [
                LocalizationPair(prefix: nil, first: "192.0.2.1", second: "192.0.2.2", label: "x")
            ]
        }
        try await ServerHarness.run(configure: both) { server in
            let port = try #require(server.ports.analyzerPlain)
            let body = try await HTTPProbe.request(port: port, path: "/Results?command=getServers")
            let json = try JSONValue.parse(Array(body.utf8))
            #expect(
                json["response"]?["server-site-pairs"]
                    == .array([.array([.string("lga03"), .string("ord02"), .string("AS64500 or AS64501")])]))
            #expect(
                json["response"]?["server-ip-pairs"]
                    == .array([.array([.string("192.0.2.1"), .string("192.0.2.2"), .string("x")])]))
        }
    }

    @Test(
        "malformed site pairs are configuration errors",
        arguments: ["lga03,lga03,same", "lga03,ord 02,space", "lga03/x,ord02,slash", "lga03,ord02", "10.0.0.0/8=a"])
    func malformedSites(text: String) {
        let error = #expect(throws: ReplayServerError.self) { _ = try LocalizationPair(parsingSites: text) }
        #expect(error?.code == .invalidConfiguration)
    }
}
