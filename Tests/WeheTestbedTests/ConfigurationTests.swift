import Testing

@testable import WeheTestbed

@Suite("Proxy configuration")
struct ConfigurationTests {
    typealias Configuration = ThrottlingProxyConfiguration

    @Test("endpoints parse from host:port, [v6]:port and a bare port")
    func endpoints() throws {
        #expect(try Configuration.Endpoint(parsing: "10.0.0.1:443") == .init(host: "10.0.0.1", port: 443))
        #expect(try Configuration.Endpoint(parsing: "[::1]:8443") == .init(host: "::1", port: 8443))
        #expect(try Configuration.Endpoint(parsing: "9000") == .init(host: "127.0.0.1", port: 9000))
        #expect(Configuration.Endpoint(host: "::1", port: 80).description == "[::1]:80")
    }

    @Test("malformed endpoints throw", arguments: ["", ":80", "host:", "host:65536", "::1:80", "[::1]80", "h:-1"])
    func badEndpoints(text: String) {
        #expect(throws: WeheTestbedError(.invalidArgument, "")) { try Configuration.Endpoint(parsing: text) }
    }

    @Test("routes parse with transport, both endpoints and the plain flag")
    func routes() throws {
        let route = try Configuration.Route(parsing: "udp:0=127.0.0.2:5004")
        #expect(route.transport == .udp)
        #expect(route.listen == .init(host: "127.0.0.1", port: 0))
        #expect(route.upstream == .init(host: "127.0.0.2", port: 5004))
        #expect(route.isClassified)
        let plain = try Configuration.Route(parsing: "tcp:127.0.0.1:55555=127.0.0.2:55555,plain")
        #expect(!plain.isClassified)
        #expect(plain.description == "tcp:127.0.0.1:55555=127.0.0.2:55555,plain")
        #expect(try Configuration.Route(parsing: plain.description) == plain)
    }

    @Test("malformed routes throw", arguments: ["sctp:1=2", "tcp:1", "tcp:1=2=3", "1=2", "tcp:x=2"])
    func badRoutes(text: String) {
        #expect(throws: WeheTestbedError(.invalidArgument, "")) { try Configuration.Route(parsing: text) }
    }

    private func valid() -> Configuration {
        Configuration(
            routes: [
                .init(.tcp, listen: .init(host: "127.0.0.1", port: 0), upstream: .init(host: "127.0.0.1", port: 1))
            ],
            classifier: .patterns([Array("x".utf8)]),
            shaping: .init(rateBitsPerSecond: 1000),
            loss: .init(probability: 0.01)
        )
    }

    @Test("a valid configuration passes")
    func validPasses() throws {
        try valid().validate()
    }

    @Test(
        "each out-of-range value is refused with its field",
        arguments: [
            "routes", "upstreamPort", "emptyPatterns", "emptyPattern", "longPattern", "ports", "rate", "burst",
            "after", "directions", "loss", "idle",
        ])
    func invalid(field: String) {
        var configuration = valid()
        switch field {
        case "routes": configuration.routes = []
        case "upstreamPort": configuration.routes[0].upstream.port = 0
        case "emptyPatterns": configuration.classifier = .patterns([])
        case "emptyPattern": configuration.classifier = .patterns([[]])
        case "longPattern":
            configuration.inspectedBytes = 2
            configuration.classifier = .patterns([Array("xyz".utf8)])
        case "ports": configuration.classifier = .serverPorts([0])
        case "rate": configuration.shaping?.rateBitsPerSecond = 0
        case "burst": configuration.shaping?.burstBytes = 0
        case "after": configuration.shaping?.afterBytes = -1
        case "directions": configuration.shaping?.directions = []
        case "loss": configuration.loss?.probability = 1
        default: configuration.udpIdleTimeout = .zero
        }
        #expect(throws: WeheTestbedError(.invalidConfiguration, "")) { try configuration.validate() }
        #expect(throws: WeheTestbedError(.invalidConfiguration, "")) {
            _ = try ThrottlingProxy(configuration: configuration)
        }
    }
}

@Suite("Rate parsing")
struct RateParsingTests {
    @Test(
        "rates with and without units",
        arguments: [
            ("1.5mbit", 1_500_000), ("4 Mbit", 4_000_000), ("800kbit", 800_000), ("2000000", 2_000_000),
            ("10M", 10_000_000), ("1gbps", 1_000_000_000), ("12bit", 12),
        ])
    func parses(text: String, bits: Int) throws {
        #expect(try ThrottlingProxyConfiguration.parseBitRate(text) == bits)
    }

    @Test("nonsense is refused", arguments: ["", "fast", "-1mbit", "0", "1.5 furlongs", "mbit", "0.0001bit"])
    func refuses(text: String) {
        #expect(throws: WeheTestbedError(.invalidArgument, "")) { try ThrottlingProxyConfiguration.parseBitRate(text) }
    }

    @Test("formatting for people")
    func formats() {
        #expect(ThrottlingProxyConfiguration.formatBitRate(1_500_000) == "1.5 Mbit/s")
        #expect(ThrottlingProxyConfiguration.formatBitRate(800_000) == "800 kbit/s")
        #expect(ThrottlingProxyConfiguration.formatBitRate(999) == "999 bit/s")
    }
}
