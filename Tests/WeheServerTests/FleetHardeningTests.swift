import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// `localize` must not make the server sign requests to any host, and a signed request must not
/// work anywhere but where it was sent, once.
@Suite("Fleet requests hardened", .timeLimit(.minutes(6)))
struct FleetHardeningTests {
    /// Counts the connections a loopback listener accepts (a stand-in for an attacker's server).
    struct Listener: Sendable {
        let channel: any Channel
        let port: Int
        private let accepted: Counter

        var count: Int { accepted.value }

        static func start(host: String) async throws -> Listener {
            let counter = Counter()
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { child in
                    counter.increment()
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: host, port: 0).get()
            return Listener(channel: channel, port: channel.localAddress?.port ?? 0, accepted: counter)
        }
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func increment() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    static let user = "@harden001"

    /// A localize request naming `second` as server 2 (server 1 is 127.0.0.1).
    static func body(second: String) -> String {
        LocalizationFleetTests.localizeBody(user: user, first: 6, second: 7, single: 5)
            .replacingOccurrences(of: "127.0.0.2", with: second)
    }

    static func localize(_ server: ServerHarness.Running, second: String) async throws -> (status: Int, body: String) {
        try await LocalizationFleetTests.request(
            port: try #require(server.ports.analyzerPlain), method: "POST", target: "/Results",
            body: Self.body(second: second))
    }

    static func seedLocal(_ server: ServerHarness.Running) async throws {
        try await AnalyzerTests.seed(
            server.store, user: user, historyCount: 6, original: LocalizationFleetTests.half,
            control: LocalizationFleetTests.half)
    }

    @Test("localize never contacts a server that is not a configured pair or fleet server")
    func unlistedServerIsNotContacted() async throws {
        let attacker = try await Listener.start(host: "127.0.0.3")
        let fleet = try LocalizationFleetTests.fleet()
        let ca = try LocalizationFleetTests.certificates().caCertificate
        try await ServerHarness.run(
            configure: LocalizationFleetTests.askingPeer(port: attacker.port, ca: ca, fleet: fleet)
        ) { server in
            try await Self.seedLocal(server)
            let answer = try await Self.localize(server, second: "127.0.0.3")
            #expect(answer.body == #"{"success": true}"#)
            let run = try #require(try await server.store.localization(userID: Self.user, historyCounts: [6, 7]))
            #expect(run.summary?.note?.contains("127.0.0.3 not asked: not a configured") == true)
        }
        #expect(attacker.count == 0)
        try await attacker.channel.close()
    }

    @Test("without a peer CA no signed request goes out over plain HTTP")
    func noPlainHTTP() async throws {
        let peer = try await Listener.start(host: "127.0.0.2")
        let fleet = try LocalizationFleetTests.fleet()
        try await ServerHarness.run(
            configure: LocalizationFleetTests.askingPeer(port: peer.port, ca: nil, fleet: fleet)
        ) { server in
            try await Self.seedLocal(server)
            _ = try await Self.localize(server, second: "127.0.0.2")
            let run = try #require(try await server.store.localization(userID: Self.user, historyCounts: [6, 7]))
            #expect(run.summary?.note?.contains("signed peer requests go only over HTTPS") == true)
        }
        #expect(peer.count == 0)
        try await peer.channel.close()
    }

    @Test("a peer whose certificate does not name it is not trusted with the request")
    func peerNameVerified() async throws {
        // The CA is right, but the certificate names 127.0.0.9, not 127.0.0.2.
        let files = try CertificateFactory.issue(
            into: TestResources.temporaryDirectory("wehe-fleet-wrong-name"), hostNames: ["127.0.0.9"])
        let fleet = try LocalizationFleetTests.fleet()
        let second: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.bindAddress = "127.0.0.2"
            configuration.fleetAuthenticator = fleet
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.analyzerTLSPort = 0
        }
        try await ServerHarness.run(configure: second) { peer in
            try await AnalyzerTests.seed(
                peer.store, user: Self.user, historyCount: 7, original: LocalizationFleetTests.half,
                control: LocalizationFleetTests.half)
            let port = try #require(peer.ports.analyzerTLS)
            try await ServerHarness.run(
                configure: LocalizationFleetTests.askingPeer(port: port, ca: files.caCertificate, fleet: fleet)
            ) { server in
                try await Self.seedLocal(server)
                _ = try await Self.localize(server, second: "127.0.0.2")
                let run = try #require(try await server.store.localization(userID: Self.user, historyCounts: [6, 7]))
                // Server 2's samples never arrived: the pair-sum test could not run.
                #expect(run.summary?.mwuPValue == nil)
                #expect(run.summary?.note?.contains("127.0.0.2") == true)
            }
        }
    }

    @Test("a signed request works once, only at the host it names, only with the body it was signed with")
    func signatureBoundToHostBodyAndNonce() async throws {
        let fleet = try LocalizationFleetTests.fleet()
        let withFleet: (inout ReplayServerConfiguration) -> Void = { $0.fleetAuthenticator = fleet }
        try await ServerHarness.run(configure: withFleet) { server in
            let port = try #require(server.ports.analyzerPlain)
            try await Self.seedLocal(server)
            let target = LocalizationFleetTests.measurementTarget("clientXputs", user: Self.user, historyCount: 6)
            // Captured on its way to another fleet member, replayed here.
            let elsewhere = fleet.headers(method: "GET", host: "127.0.0.2", target: target, now: Date())
            let forwarded = try await LocalizationFleetTests.request(
                port: port, target: target, headers: elsewhere, hostHeader: "127.0.0.2")
            #expect(forwarded.status == 403)
            #expect(forwarded.body.contains("signed for another host"))
            // With this server's name in the Host header instead, the signature no longer matches.
            let renamed = try await LocalizationFleetTests.request(port: port, target: target, headers: elsewhere)
            #expect(renamed.status == 403)
            #expect(renamed.body.contains("does not match"))
            // Sent here, then replayed here.
            let headers = fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: Date())
            let first = try await LocalizationFleetTests.request(port: port, target: target, headers: headers)
            #expect(first.status == 200)
            let replayed = try await LocalizationFleetTests.request(port: port, target: target, headers: headers)
            #expect(replayed.status == 403)
            #expect(replayed.body.contains("replayed"))
            // A form body other than the signed one.
            let form = "command=getMeasurements&measurementType=clientXputs&userID=%40harden001&historyCount=6&testID=0"
            let signedForOther = fleet.headers(
                method: "POST", host: "127.0.0.1", target: "/Results", body: Array("command=other".utf8), now: Date())
            let tampered = try await LocalizationFleetTests.request(
                port: port, method: "POST", target: "/Results", body: form, headers: signedForOther)
            #expect(tampered.status == 403)
            let signedForm = fleet.headers(
                method: "POST", host: "127.0.0.1", target: "/Results", body: Array(form.utf8), now: Date())
            let accepted = try await LocalizationFleetTests.request(
                port: port, method: "POST", target: "/Results", body: form, headers: signedForm)
            #expect(accepted.status == 200)
        }
    }

    @Test("localize is rate-limited per address and stores nothing for tests that did not run here")
    func localizeBounded() async throws {
        let limited: (inout ReplayServerConfiguration) -> Void = { $0.localizeRequestsPerMinute = 3 }
        try await ServerHarness.run(configure: limited) { server in
            let port = try #require(server.ports.analyzerPlain)
            // Nothing of this user ran here: refused, no row.
            let stranger = try await LocalizationFleetTests.request(
                port: port, method: "POST", target: "/Results",
                body: LocalizationFleetTests.localizeBody(user: "@nobody0001", first: 6, second: 7, single: 5))
            #expect(stranger.body.contains("ran on this server"))
            #expect(try await server.store.localization(userID: "@nobody0001", historyCounts: [6, 7]) == nil)
            var statuses: [Int] = []
            for _ in 0..<4 {
                statuses.append(
                    try await LocalizationFleetTests.request(
                        port: port, method: "POST", target: "/Results",
                        body: LocalizationFleetTests.localizeBody(user: "@nobody0001", first: 6, second: 7, single: 5)
                    ).status)
            }
            // Three in the burst (one taken above), then 429.
            #expect(statuses == [200, 200, 429, 429])
        }
    }
}
