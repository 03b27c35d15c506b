import Foundation
import Testing
import WeheCore
import WeheStore
import WeheTestKit
import WeheWire

@testable import WeheServer

/// The fleet's nonce store cannot be exhausted through `localize`: the store forgets its oldest nonces instead of
/// refusing everyone when full (and stays replay-proof), `localize` is limited per address, network and user, each
/// peer gets a bounded number of signed requests a minute, and a measurement asked twice is answered from a cache.
@Suite("Fleet nonce store and peer-request budget", .timeLimit(.minutes(6)))
struct FleetNonceBudgetTests {
    static let target = "/Results?command=getMeasurements&measurementType=clientXputs&userID=%40budget01"

    /// Checks one request signed by `fleet` at `date` with `nonce`, as received at `now`.
    static func check(
        _ fleet: FleetAuthenticator, date: Date, nonce: String = FleetAuthenticator.newNonce(), now: Date
    ) -> (FleetAuthenticator.Check, headers: [(name: String, value: String)]) {
        let headers = fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: date, nonce: nonce)
        return (checkHeaders(fleet, headers, now: now), headers)
    }

    static func checkHeaders(
        _ fleet: FleetAuthenticator, _ headers: [(name: String, value: String)], now: Date
    ) -> FleetAuthenticator.Check {
        func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        return fleet.check(
            method: "GET", host: "127.0.0.1", target: target, body: [],
            date: value(FleetAuthenticator.dateHeader), nonce: value(FleetAuthenticator.nonceHeader),
            signature: value(FleetAuthenticator.signatureHeader), ownHosts: ["127.0.0.1"], now: now)
    }

    @Test("a full nonce store still accepts fresh requests and still refuses replayed ones, forgotten or kept")
    func fullStore() throws {
        let fleet = try FleetAuthenticator(secret: LocalizationFleetTests.secret, nonceCapacity: 100)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // A flood: 100 signed requests spread over the last 10 seconds fills the store.
        var flood: [[(name: String, value: String)]] = []
        for index in 0..<100 {
            let (outcome, headers) = Self.check(fleet, date: now.addingTimeInterval(Double(index / 10 - 10)), now: now)
            #expect(outcome == .member)
            flood.append(headers)
        }
        #expect(fleet.rememberedNonces == 100)
        // Fresh requests keep being accepted; the oldest second is forgotten to make room.
        for _ in 0..<20 {
            #expect(Self.check(fleet, date: now, now: now).0 == .member)
        }
        #expect(fleet.rememberedNonces <= 100)
        // Every flood request replayed is refused: the kept ones as replays, the forgotten ones by their date.
        var replayed = 0
        var forgotten = 0
        for headers in flood {
            guard case .refused(let reason) = Self.checkHeaders(fleet, headers, now: now) else {
                Issue.record("a replayed request was accepted")
                continue
            }
            if reason.contains("replayed") { replayed += 1 }
            if reason.contains("oldest nonce") { forgotten += 1 }
        }
        #expect(replayed > 0)
        #expect(forgotten >= 20)
        #expect(replayed + forgotten == 100)
        // A new request dated in a forgotten second is refused too (its nonce could have been one forgotten).
        let (late, _) = Self.check(fleet, date: now.addingTimeInterval(-10), now: now)
        #expect(late != .member)
        // Outside the window, refused as before, whatever the store holds.
        let (stale, _) = Self.check(fleet, date: now.addingTimeInterval(-601), now: now)
        guard case .refused(let reason) = stale else {
            Issue.record("a stale request was accepted")
            return
        }
        #expect(reason.contains("clocks disagree"))
    }

    @Test("the store forgets requests whose date left the window before it forgets anything else")
    func expiryFirst() throws {
        let fleet = try FleetAuthenticator(secret: LocalizationFleetTests.secret, window: 60, nonceCapacity: 10)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for _ in 0..<10 { #expect(Self.check(fleet, date: start, now: start).0 == .member) }
        // Two minutes later those dates can no longer pass the date check: they make room, and no floor is set.
        let later = start.addingTimeInterval(120)
        var recent: [[(name: String, value: String)]] = []
        for index in 0..<10 {
            let (outcome, headers) = Self.check(fleet, date: later.addingTimeInterval(Double(index - 10)), now: later)
            #expect(outcome == .member)
            recent.append(headers)
        }
        #expect(fleet.rememberedNonces == 10)
        for headers in recent {
            guard case .refused(let reason) = Self.checkHeaders(fleet, headers, now: later) else {
                Issue.record("a replayed request was accepted")
                continue
            }
            #expect(reason.contains("replayed"))
        }
    }

    @Test("localize is limited per /24, per /64 and per user id, not only per exact address")
    func localizeAdmission() {
        let admission = LocalizeAdmission(perAddressPerMinute: 6, perNetworkPerMinute: 12, perUserPerMinute: 6)
        let start = ContinuousClock.now
        let fromOne24 = (0..<200).filter { admission.admit(clientAddress: "198.51.100.\($0)", now: start) == nil }
        #expect(fromOne24.count == 12)
        #expect(admission.admit(clientAddress: "198.51.101.7", now: start) == nil)
        let fromOne64 = (0..<300).filter {
            admission.admit(clientAddress: "2001:db8:1:2::\(String($0, radix: 16))", now: start) == nil
        }
        #expect(fromOne64.count == 12)
        #expect(admission.admit(clientAddress: "2001:db8:1:3::1", now: start) == nil)
        // IPv4-mapped IPv6 counts against the IPv4 /24.
        #expect(admission.admit(clientAddress: "::ffff:198.51.100.250", now: start)?.contains("network") == true)
        // One address: its own limit first.
        let single = (0..<10).compactMap { _ in admission.admit(clientAddress: "203.0.113.9", now: start) }
        #expect(single.count == 4)
        #expect(single.allSatisfy { $0.contains("address") })
        // One user id from anywhere.
        let user = (0..<10).filter { _ in admission.admit(userID: "@budget01", now: start) == nil }
        #expect(user.count == 6)
        #expect(admission.admit(userID: "@budget02", now: start) == nil)
        // A minute later the network may localize again.
        #expect(admission.admit(clientAddress: "198.51.100.77", now: start.advanced(by: .seconds(61))) == nil)
    }

    @Test("the answer cache reuses answers for its lifetime and stays within its bounds")
    func answerCache() {
        let cache = PeerAnswerCache(lifetime: .seconds(300), maximumEntries: 3, maximumBytes: 1_000)
        let start = ContinuousClock.now
        cache.store("a", .string("A"), bytes: 100, now: start)
        #expect(cache.answer("a", now: start.advanced(by: .seconds(299))) == .string("A"))
        #expect(cache.answer("a", now: start.advanced(by: .seconds(301))) == nil)
        for (index, key) in ["b", "c", "d", "e"].enumerated() {
            cache.store(key, .string(key), bytes: 100, now: start.advanced(by: .seconds(index)))
        }
        #expect(cache.count == 3)
        #expect(cache.answer("b", now: start.advanced(by: .seconds(5))) == nil)
        #expect(cache.answer("e", now: start.advanced(by: .seconds(5))) == .string("e"))
        // 950 more bytes leave room for no other answer.
        cache.store("big", .string("big"), bytes: 950, now: start.advanced(by: .seconds(6)))
        #expect(cache.count == 1)
        #expect(cache.answer("big", now: start.advanced(by: .seconds(6))) == .string("big"))
        cache.store("huge", .string("huge"), bytes: 1_001, now: start.advanced(by: .seconds(7)))
        #expect(cache.answer("huge", now: start.advanced(by: .seconds(7))) == nil)
    }

    /// Server 2 on 127.0.0.2 (HTTPS analyzer) with its own authenticator, whose stored tests 10…19 of `user` have
    /// throughput samples; the body gets it, its authenticator (the nonces it remembers are the signed requests it
    /// accepted), the CA and its port.
    static func withPeer(
        user: String,
        _ body: @Sendable (ServerHarness.Running, FleetAuthenticator, String, Int) async throws -> Void
    ) async throws {
        let peerFleet = try LocalizationFleetTests.fleet()
        let files = try LocalizationFleetTests.certificates()
        let configure: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.bindAddress = "127.0.0.2"
            configuration.fleetAuthenticator = peerFleet
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.analyzerTLSPort = 0
        }
        try await ServerHarness.run(configure: configure) { peer in
            for historyCount in 10..<20 {
                try await AnalyzerTests.seed(
                    peer.store, user: user, historyCount: historyCount, original: LocalizationFleetTests.half,
                    control: LocalizationFleetTests.half)
            }
            try await body(peer, peerFleet, files.caCertificate, try #require(peer.ports.analyzerTLS))
        }
    }

    @Test("signed requests to one peer are bounded per minute, and a measurement asked twice is asked once")
    func peerBudgetAndCache() async throws {
        let user = "@budget03"
        try await Self.withPeer(user: user) { _, peerFleet, ca, port in
            let peers = PeerMeasurements(
                caCertificatePath: ca, port: port, timeout: .seconds(8),
                authenticator: try LocalizationFleetTests.fleet(), requestsPerMinute: 3, now: { Date() })
            for historyCount in 10..<13 {
                let answer = await peers.clientThroughput(host: "127.0.0.2", userID: user, historyCount: historyCount)
                #expect((try? answer.get()) == LocalizationFleetTests.half)
            }
            #expect(peerFleet.rememberedNonces == 3)
            // The same measurement again: from the cache, no signed request.
            let again = await peers.clientThroughput(host: "127.0.0.2", userID: user, historyCount: 10)
            #expect((try? again.get()) == LocalizationFleetTests.half)
            #expect(peerFleet.rememberedNonces == 3)
            // A new one: the minute's budget for this peer is spent; the peer is not asked.
            let refused = await peers.clientThroughput(host: "127.0.0.2", userID: user, historyCount: 13)
            guard case .failure(let error) = refused else {
                Issue.record("a request beyond the budget was sent")
                return
            }
            #expect(error.message.contains("budget of 3 signed requests a minute"))
            #expect(peerFleet.rememberedNonces == 3)
        }
    }

    @Test("localize asked twice for the same tests sends the peer its signed requests once")
    func repeatedLocalize() async throws {
        let user = "@budget04"
        try await Self.withPeer(user: user) { _, peerFleet, ca, port in
            let asking = LocalizationFleetTests.askingPeer(
                port: port, ca: ca, fleet: try LocalizationFleetTests.fleet())
            try await ServerHarness.run(configure: asking) { first in
                try await AnalyzerTests.seed(
                    first.store, user: user, historyCount: 5, original: LocalizationFleetTests.single,
                    control: LocalizationFleetTests.single)
                try await AnalyzerTests.seed(
                    first.store, user: user, historyCount: 6, original: LocalizationFleetTests.half,
                    control: LocalizationFleetTests.half)
                // A loss timeline here, so localize asks the peer for the other one.
                try await first.store.save(
                    loss: LocalizationFleetTests.lossRecord(user: user, historyCount: 6, lossySeconds: [2]))
                let analyzer = try #require(first.ports.analyzerPlain)
                let body = LocalizationFleetTests.localizeBody(user: user, first: 6, second: 10, single: 5)
                let once = try await LocalizationFleetTests.request(
                    port: analyzer, method: "POST", target: "/Results", body: body)
                #expect(once.body == #"{"success": true}"#)
                let sent = peerFleet.rememberedNonces
                // clientXputs, then minRttAndDuration (refused: no loss timeline there), each signed.
                #expect(sent == 2)
                let twice = try await LocalizationFleetTests.request(
                    port: analyzer, method: "POST", target: "/Results", body: body)
                #expect(twice.body == #"{"success": true}"#)
                // The samples come from the cache; only the refused timeline is asked again.
                #expect(peerFleet.rememberedNonces == sent + 1)
                let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 10]))
                #expect(run.summary?.simultaneousMeansMbps.count == 2)
            }
        }
    }
}
