import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// Stored samples only for replays that ran, a stored-replay quota per client network, and DPI searches tied to a
/// stored test of the user (Docs/server.md, "Stored tests and DPI searches: what a client can make the server keep").
@Suite("Stored-test limits: replays that ran, per-network quota, DPI searches tied to tests", .timeLimit(.minutes(3)))
struct StoredTestLimitsTests {
    static func tinyWeb() throws -> ReplayTrace {
        try ReplayLibrary(directory: TestResources.fixtureReplays).trace(file: "TinyWeb_11212026.pcap_client_all.json")
    }

    static func loaded(_ name: String) throws -> LoadedReplay {
        try #require(
            try ReplayCatalogue(directory: TestResources.fixtureReplays, logger: ServerHarness.logger).replays[name])
    }

    // MARK: the rule

    @Test("the replay-ran rule: half the bytes both ways, or traffic over half the expected duration")
    func rule() throws {
        let tinyWeb = try Self.loaded("TinyWeb-11212026")
        let requirement = ReplayProgress.requirement(for: tinyWeb)
        // TinyWeb: 4 requests of 98 bytes, 400 000 response bytes, 0.6 s long (the 1-s floor applies).
        #expect(requirement == ReplayProgress.Requirement(clientBytes: 196, serverBytes: 200_000, activeSeconds: 1))
        #expect(!ReplayProgress(clientBytes: 10).meets(requirement))
        #expect(!ReplayProgress(clientBytes: 392, serverBytes: 120_000, activeSeconds: 0.2).meets(requirement))
        #expect(!ReplayProgress(clientBytes: 98, serverBytes: 400_000).meets(requirement))
        #expect(ReplayProgress(clientBytes: 196, serverBytes: 200_000).meets(requirement))
        // A throttled replay the client's deadline cut: few bytes, but for long.
        #expect(ReplayProgress(clientBytes: 98, serverBytes: 30_000, activeSeconds: 1.2).meets(requirement))
        #expect(ReplayProgress(clientBytes: 10).shortfall(of: requirement).contains("10 of the 196 client bytes"))

        // A long timed trace asks for half its duration, capped by the client's 45-s deadline; port tests for 15 s.
        var long = tinyWeb
        long.client.packets[3].timestamp = 100
        #expect(ReplayProgress.requirement(for: long).activeSeconds == 22.5)
        long.client.packets[3].timestamp = 30
        #expect(ReplayProgress.requirement(for: long).activeSeconds == 15)
        #expect(ReplayProgress.requirement(for: try Self.loaded("port_8081")).activeSeconds == 15)
    }

    @Test("a session counts TCP activity from its first bytes to the last response the client drained")
    func sessionActivity() throws {
        let replay = try Self.loaded("TinyWeb-11212026")
        let declaration = try IDDeclaration(parsing: Array("@activity01;0;\(replay.name);0;1;False;127.0.0.1;3.3".utf8))
        let session = Session(
            id: 1, declaration: declaration, peerAddress: "127.0.0.1", admissionKey: "ip:127.0.0.1", replay: replay,
            admittedAt: Date(), notifier: SideChannelNotifier(write: { _ in }, close: {}))
        let start = ContinuousClock.now
        session.recordTraffic(clientBytes: 98, active: true, at: start)
        // Request bytes trickling in without a response do not stretch the activity.
        session.recordTraffic(clientBytes: 1, active: false, at: start + .seconds(5))
        #expect(session.progress == ReplayProgress(clientBytes: 99, serverBytes: 0, activeSeconds: 0))
        session.recordTraffic(serverBytes: 120_000, active: false, at: start + .seconds(1))
        session.recordTraffic(active: true, at: start + .seconds(2))
        #expect(session.progress == ReplayProgress(clientBytes: 99, serverBytes: 120_000, activeSeconds: 2))
    }

    // MARK: over the side channel

    @Test("a replay connection that got one packet stores no upload larger than a real test's, and no more")
    func onePacketIsNotATest() async throws {
        let trace = try Self.tinyWeb()
        var fake = trace
        fake.packets = [trace.packets[0]]
        fake.packets[0].payload = Array(trace.packets[0].payload.prefix(10))
        fake.packets[0].kind = .tcp(responseLength: 0, responseHash: nil)
        let onePacket = fake
        try await ServerHarness.run { server in
            // 300 samples: more than the grant's allowance (2 x 100), which only a replay that ran may store.
            var client = ScriptedClient(userID: "@fakeone01")
            client.samples = ScriptedClient.samples(count: 300, interval: 0.01)
            let outcome = try await client.run(onePacket, testID: 0, server: server)
            #expect(outcome.grant.hasPrefix("1;"))
            #expect(outcome.okAfterSamples != "OK")
            #expect(outcome.okAfterSamples?.hasPrefix("Refused;the replay did not run here") == true)
            #expect(try await server.store.test(TestKey(userID: "@fakeone01", historyCount: 1)) == nil)
            // The whole replay is stored.
            // (From another address: the refused session may still hold 127.0.0.1 for a moment.)
            let real = try await ScriptedClient(userID: "@realone01", source: "127.0.0.2")
                .run(trace, testID: 0, server: server)
            #expect(real.okAfterSamples == "OK")
            #expect(try await server.store.test(TestKey(userID: "@realone01", historyCount: 1)) != nil)
        }
    }

    @Test("a UDP client's datagrams count for its replay after the server's stream ended, up to its DONE")
    func udpDatagramsAfterTheServersStream() async throws {
        let trace = try SideChannelTests.fixture("TinyCall_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            // The first datagram opens the flow; the other 51 (2 942 of the 3 000 client bytes) are sent after the
            // server's stream is DONE. 250 samples at 1 ms: more than the grant's allowance, so the server stores
            // them only for a replay that ran, which this one did (the requirement: 1 500 client bytes).
            var client = ScriptedClient(userID: "@udplate01")
            client.udpSendsAfterServerDone = true
            client.samples = ScriptedClient.samples(count: 250, interval: 0.001)
            let outcome = try await client.run(trace, testID: 0, server: server)
            #expect(outcome.grant.hasPrefix("1;"))
            #expect(outcome.okAfterSamples == "OK")
            #expect(try await server.store.test(TestKey(userID: "@udplate01", historyCount: 1)) != nil)
        }
    }

    @Test("a network's stored-replay quota refuses the next test with the reason; another network goes on")
    func quotaPerNetwork() async throws {
        let trace = try Self.tinyWeb()
        let configure: (inout ReplayServerConfiguration) -> Void = { $0.limits.storedReplaysPerNetwork = 2 }
        try await ServerHarness.run(configure: configure) { server in
            for index in 0..<2 {
                let client = ScriptedClient(userID: "@quota0\(index)00", source: "127.0.40.\(2 + index)")
                #expect(try await client.run(trace, testID: 0, server: server).okAfterSamples == "OK")
            }
            let refused = try await ScriptedClient(userID: "@quota0300", source: "127.0.40.9")
                .run(trace, testID: 0, server: server)
            #expect(refused.grant.hasPrefix("0;3;"))
            #expect(refused.grant.contains("quota"))
            #expect(try await server.store.test(TestKey(userID: "@quota0300", historyCount: 1)) == nil)
            let elsewhere = try await ScriptedClient(userID: "@quota0400", source: "127.0.41.2")
                .run(trace, testID: 0, server: server)
            #expect(elsewhere.okAfterSamples == "OK")
        }
    }

    @Test("the quota is a token bucket per /24 and per IPv6 /48")
    func quotaBuckets() {
        let quota = StoredReplayQuota(limit: 3, window: .seconds(300))
        let start = ContinuousClock.now
        let network = StoredReplayQuota.network(of: "192.0.2.77")
        #expect(network == StoredReplayQuota.network(of: "192.0.2.1"))
        #expect(network != StoredReplayQuota.network(of: "192.0.3.1"))
        #expect(StoredReplayQuota.network(of: "2001:db8:1:2::1") == StoredReplayQuota.network(of: "2001:db8:1:ff::9"))
        #expect(StoredReplayQuota.network(of: "2001:db8:1::1") != StoredReplayQuota.network(of: "2001:db8:2::1"))
        for _ in 0..<3 { #expect(quota.take(network, now: start)) }
        #expect(!quota.take(network, now: start))
        #expect(quota.remaining(network, now: start) == 0)
        #expect(quota.secondsUntilNext(network, now: start) == 100)
        #expect(quota.take("192.0.3.0/24", now: start))
        // One replay comes back every window / limit.
        #expect(quota.take(network, now: start + .seconds(101)))
        #expect(!quota.take(network, now: start + .seconds(102)))
    }

    // MARK: DPI searches

    /// Stores a test of `user` on `replay`: testID 0 at about 1 Mbit/s and 1 at about 10 (differentiation), or both
    /// alike (none).
    static func seedTest(
        _ store: any ResultStore, user: String, historyCount: Int = 1, replay: String, differentiated: Bool = true
    ) async throws {
        let original = ThroughputSeries(mbps: (0..<40).map { 1 + Double($0 % 5) * 0.05 }, interval: 0.1)
        let control = ThroughputSeries(mbps: (0..<40).map { 10 + Double($0 % 5) * 0.5 }, interval: 0.1)
        try await seedReplay(
            store, user: user, historyCount: historyCount, testID: 0, replay: replay, samples: original)
        try await seedReplay(
            store, user: user, historyCount: historyCount, testID: 1, replay: replay,
            samples: differentiated ? control : original)
    }

    /// Stores one replay (a probe's, testID 2, 3, …) of `user`'s test.
    static func seedReplay(
        _ store: any ResultStore, user: String, historyCount: Int = 1, testID: Int, replay: String,
        samples: ThroughputSeries = ThroughputSeries(mbps: [5, 5, 5, 5, 5, 5], interval: 0.1)
    ) async throws {
        try await store.save(
            replay: ReplayRecord(
                key: ReplayKey(userID: user, historyCount: historyCount, testID: testID), replayName: replay,
                samples: samples, receivedAt: Date()),
            metadata: TestMetadata(replayName: replay, startedAt: Date()))
    }

    /// `seedTest` unless the test is stored, and the probe replay `probe` unless it is.
    static func seedIfMissing(
        _ store: any ResultStore, user: String, historyCount: Int = 1, replay: String, probe: Int? = nil
    ) async throws {
        let key = TestKey(userID: user, historyCount: historyCount)
        if try await store.test(key) == nil {
            try await seedTest(store, user: user, historyCount: historyCount, replay: replay)
        }
        if let probe, try await store.test(key)?.replay(probe) == nil {
            try await seedReplay(store, user: user, historyCount: historyCount, testID: probe, replay: replay)
        }
    }

    static func ask(_ port: Int, user: String, replay: String = "DPIVec-11212026", from source: String? = nil)
        async throws -> String
    {
        let key = DPISearchKey(userID: user, carrierName: "Test Mobile", replayName: replay)
        return try await HTTPProbe.request(
            port: port, method: "POST", path: "/Results",
            body: FormParameters.encode(
                DPIAnalysisRequest.currentProbe(key: key, historyCount: 1, testID: 2).formPairs),
            from: source)
    }

    @Test("a DPI search needs a stored test of the user on that replay that found differentiation")
    func dpiNeedsDifferentiatedTest() async throws {
        let directory = try DPIAnalysisTests.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let none = try await Self.ask(port, user: "@dpinone01")
            #expect(DPIAnalysisResponse.errorCode(Array(none.utf8)) == .invalidParameter)
            #expect(none.contains("no test"), "\(none)")
            try await Self.seedTest(server.store, user: "@dpiflat01", replay: "DPIVec-11212026", differentiated: false)
            let flat = try await Self.ask(port, user: "@dpiflat01")
            #expect(flat.contains("found no differentiation"), "\(flat)")
            try await Self.seedTest(server.store, user: "@dpiother1", replay: "DPITwelve-11212026")
            let other = try await Self.ask(port, user: "@dpiother1")
            #expect(other.contains("not DPIVec-11212026"), "\(other)")
            #expect(
                try await server.store.dpiSearch(
                    DPISearchID(userID: "@dpinone01", carrierName: "Test Mobile", replayName: "DPIVec-11212026")) == nil
            )
            try await Self.seedTest(server.store, user: "@dpireal01", replay: "DPIVec-11212026")
            guard
                case .probe(let probe) = try DPIAnalysisTests.parse(try await Self.ask(port, user: "@dpireal01")).get()
            else {
                Issue.record("no first probe for a test with differentiation")
                return
            }
            #expect(probe.testPacket == "C_1")
        }
    }

    @Test("a report needs its probe's replay stored here; probeBytes is clamped to the trace's bytes")
    func dpiReportsTiedToProbeReplays() async throws {
        let directory = try DPIAnalysisTests.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await ServerHarness.run(replays: directory) { server in
            let port = try #require(server.ports.analyzerPlain)
            let user = "@dpiprobe1"
            try await Self.seedTest(server.store, user: user, replay: "DPIVec-11212026")
            _ = try await Self.ask(port, user: user)
            let key = DPISearchKey(userID: user, carrierName: "Test Mobile", replayName: "DPIVec-11212026")
            let report = DPIAnalysisRequest(
                key: key, historyCount: 1, testID: 2, testedLeft: 10, testedRight: 230, diff: true,
                testedPacket: "C_1", probeBytes: 3_827_160_459_400_000)
            let early = try await DPIAnalysisTests.post(port, report.formPairs)
            #expect(early.contains("did not run on this server"), "\(early)")
            try await Self.seedReplay(server.store, user: user, testID: 2, replay: "DPIVec-11212026")
            guard
                case .probe(let next) = try DPIAnalysisTests.parse(
                    try await DPIAnalysisTests.post(port, report.formPairs)
                ).get()
            else {
                Issue.record("no second probe")
                return
            }
            // DPIVec: C_1 230 bytes, S_1 751, S_2 182.
            #expect(next.bytesUsed == 230 + 751 + 182)
        }
    }

    @Test("DPI requests are limited per user and per client network (429)")
    func dpiRateLimits() async throws {
        let directory = try DPIAnalysisTests.vectorDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configure: (inout ReplayServerConfiguration) -> Void = {
            // One a minute, a burst of two: a request refilled only after 60 s, so a machine slow enough to take
            // seconds per request (the full parallel suite once refilled a rate of 4 a minute midway) cannot
            // refill the burst before the limited request.
            $0.limits.dpiRequestsPerUserPerMinute = 1
            $0.limits.dpiRequestsPerNetworkPerMinute = 1
        }
        try await ServerHarness.run(replays: directory, configure: configure) { server in
            let port = try #require(server.ports.analyzerPlain)
            try await Self.seedTest(server.store, user: "@dpirate01", replay: "DPIVec-11212026")
            // Per user: a burst of 2, from addresses of different networks.
            for index in 0..<2 {
                let body = try await Self.ask(port, user: "@dpirate01", from: "127.0.5\(index).2")
                #expect(!body.contains("too many"), "\(body)")
            }
            let user = try await Self.ask(port, user: "@dpirate01", from: "127.0.59.2")
            #expect(user.contains("too many DPIanalysis requests for this user"), "\(user)")
            // Per network: a burst of 2 from one /24, whoever the user; another /24 still gets through.
            for index in 0..<2 {
                let body = try await Self.ask(port, user: "@dpinet0\(index)", from: "127.0.60.\(2 + index)")
                #expect(!body.contains("too many"), "\(body)")
            }
            let network = try await Self.ask(port, user: "@dpinet09", from: "127.0.60.99")
            #expect(network.contains("too many DPI requests from your network"), "\(network)")
            let elsewhere = try await Self.ask(port, user: "@dpinet10", from: "127.0.61.2")
            #expect(!elsewhere.contains("too many"), "\(elsewhere)")
        }
    }
}
