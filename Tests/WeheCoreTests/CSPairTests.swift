import Testing
import WeheCore

@Suite("c_s_pair parsing")
struct CSPairTests {
    @Test("zero-padded IPv4 pair splits into addresses and ports")
    func ipv4() throws {
        let pair = try CSPair(parsing: "010.110.140.002.65265-018.160.041.126.00443")
        #expect(pair.clientAddress == "010.110.140.002")
        #expect(pair.clientPort == 65265)
        #expect(pair.serverAddress == "018.160.041.126")
        #expect(pair.serverPort == 443)
        #expect(pair.serverPortString == "00443")
        #expect(pair.clientPortString == "65265")
        #expect(!pair.isIPv6)
        #expect(CSPair.socketAddress(pair.serverAddress) == "18.160.41.126")
    }

    @Test("compressed IPv6 pair uses the last '-' and last '.'")
    func ipv6() throws {
        let pair = try CSPair(parsing: "2601:18d:4980:c5e0:4c4f:4718:9ff2:adcb.64221-2606:4700::6811:164b.00080")
        #expect(pair.clientAddress == "2601:18d:4980:c5e0:4c4f:4718:9ff2:adcb")
        #expect(pair.clientPort == 64221)
        #expect(pair.serverAddress == "2606:4700::6811:164b")
        #expect(pair.serverPort == 80)
        #expect(pair.isIPv6)
        #expect(CSPair.socketAddress(pair.serverAddress) == "2606:4700::6811:164b")
    }

    @Test("building a pair pads IPv4 octets and ports like the published files")
    func canonical() throws {
        let pair = CSPair(clientAddress: "10.1.2.3", clientPort: 80, serverAddress: "198.18.2.2", serverPort: 5004)
        #expect(pair.rawValue == "010.001.002.003.00080-198.018.002.002.05004")
        #expect(try CSPair(parsing: pair.rawValue) == pair)
    }

    @Test(
        "malformed pairs throw invalidCSPair",
        arguments: [
            "", "no-dash-but.1", "010.110.140.002.65265", "010.110.140.002.65265-018.160.041.126",
            "010.110.140.002.65265-018.160.041.126.99999", "010.110.140.002.6x265-018.160.041.126.00443",
            "999.110.140.002.65265-018.160.041.126.00443", "010.110.140.65265-018.160.041.126.00443",
            "zz:zz.1-2606::1.80", "010.110.140.002.-018.160.041.126.00443",
        ]
    )
    func malformed(text: String) {
        #expect(throws: WeheCoreError(.invalidCSPair, "")) { try CSPair(parsing: text) }
    }
}
