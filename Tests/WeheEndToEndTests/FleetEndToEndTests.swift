import Foundation
import Synchronization
import Testing
import WeheClient
import WeheServer
import WeheStore
import WeheTestKit

/// The fake M-Lab platform of a test: a locate service (HTTPS) and an envelope service (WSS) on 127.0.0.1, both
/// with certificates of their own test CA (not the replay server's), named by `--locate-ca`.
struct FleetFakes: Sendable {
    let locate: FakeLocateService
    let envelopes: FakeEnvelopeService
    let caPath: String
    let caPEM: String

    /// The two machines the fake locate service offers, in order.
    static let machines = ["mlab1-tst01.fleet.test", "mlab2-tst02.fleet.test"]

    static func run<T: Sendable>(_ body: @Sendable (FleetFakes) async throws -> T) async throws -> T {
        let scratch = TestResources.temporaryDirectory("wehe-fleet-fakes")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let certificates = try CertificateFactory.issue(into: scratch, hostNames: ["127.0.0.1"])
        let locate = try await FakeLocateService.start(
            certificatePath: certificates.serverCertificate, keyPath: certificates.serverKey,
            answer: .body(status: 200, text: "{}"))
        let envelopes = try await FakeEnvelopeService.start(
            certificatePath: certificates.serverCertificate, keyPath: certificates.serverKey)
        let fakes = FleetFakes(
            locate: locate, envelopes: envelopes, caPath: certificates.caCertificate,
            caPEM: try String(contentsOfFile: certificates.caCertificate, encoding: .utf8))
        do {
            let value = try await body(fakes)
            await locate.stop()
            await envelopes.stop()
            return value
        } catch {
            await locate.stop()
            await envelopes.stop()
            throw error
        }
    }

    /// The targets with these envelope tokens (one per machine, in order).
    func targets(_ tokens: [String] = ["token-1", "token-2"]) -> [FakeLocateService.Target] {
        zip(Self.machines, tokens).map { machine, token in
            FakeLocateService.Target(machine: machine, city: "Testville", envelopeURL: envelopes.url(token: token))
        }
    }

    /// Answers locate with `targets` (and a `next_request`, when given).
    func offer(
        _ targets: [FakeLocateService.Target], nextRequest: (nbf: Date, exp: Date, url: String)? = nil
    ) {
        locate.setAnswer(.body(status: 200, text: FakeLocateService.body(targets, nextRequest: nextRequest)))
    }

    /// The client's fleet configuration: the fake locate service, its CA, the side-channel hosts mapped to the
    /// replay server's loopback address.
    func configuration(serverAddress: String = "127.0.0.1", locateTimeout: Duration = .seconds(10))
        -> FleetConfiguration
    {
        FleetConfiguration(
            locateURL: locate.baseURL, additionalTrustPEM: caPEM, locateTimeout: locateTimeout,
            addressOverrides: Dictionary(
                uniqueKeysWithValues: Self.machines.map { ("wehe-" + $0, serverAddress) }))
    }

    /// `wehe` options for this platform in front of `world`'s server (no `--server`: the default is the fleet).
    func options(_ world: LoopbackWorld, data: String) -> [String] {
        [
            "--replays", TestResources.fixtureReplays, "--data-dir", data, "--locate-url", locate.baseURL,
            "--locate-ca", caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
            "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
        ] + Self.machines.flatMap { ["--resolve", "wehe-\($0):\(world.address)"] }
    }
}

@Suite("The fleet path: locate → access envelope → replay → analysis, on loopback", .timeLimit(.minutes(3)))
struct FleetEndToEndTests {
    @Test("a full test through locate and the envelope; the envelope is open for every event and closed after")
    func fullTest() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackWorld.run(address: "127.0.0.61") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let fleet = fakes.configuration(serverAddress: world.address)
                let answer = try await FleetLocator(configuration: fleet).locate()
                #expect(answer.targets.map(\.machine) == FleetFakes.machines)
                #expect(answer.targets.first?.place == "Testville, ZZ")
                let access = try await FleetAccess.open(answer, configuration: fleet)
                #expect(access.attempts == 1)
                #expect(access.target.sideChannelHost == "wehe-mlab1-tst01.fleet.test")
                var client = world.client(userID: "@fleetfull1")
                client.server = access.server
                client.extraString = String(access.attempts)
                let configured = client
                let envelopes = fakes.envelopes
                let openAtEvents = Mutex<[Bool]>([])
                let result = try await access.envelope.guarding {
                    try await ReplayClient(configuration: configured).run(test) { _ in
                        openAtEvents.withLock { $0.append(envelopes.openCount == 1) }
                    }
                }
                let finished = Date()
                #expect(envelopes.openCount == 1, "the envelope stays open until the caller closes it")
                await access.close()
                #expect(await envelopes.wait { $0.first?.closedAt != nil })
                let events = openAtEvents.withLock { $0 }
                #expect(events.count >= 5 && events.allSatisfy { $0 }, "\(events)")
                let session = try #require(envelopes.sessions.first)
                #expect(envelopes.sessions.count == 1)
                #expect(session.token == "token-1")
                #expect(session.framesReceived == 0, "nothing is sent on the envelope")
                #expect(try #require(session.closedAt) >= finished)
                let record = try #require(
                    try await world.serverStore.test(TestKey(userID: "@fleetfull1", historyCount: result.historyCount)))
                #expect(record.metadata.extraString == "1")
                #expect(record.replays.count == 2)
                #expect(fakes.locate.requests.map(\.unidentified) == ["/v2/nearest/wehe/replay"])
            }
        }
    }

    @Test("the first envelope is refused: the second target is used and the extra string says 2")
    func firstEnvelopeRefused() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackWorld.run(address: "127.0.0.62") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                fakes.envelopes.setBehaviour(.refuse(status: 403), for: "token-1")
                let fleet = fakes.configuration(serverAddress: world.address)
                let answer = try await FleetLocator(configuration: fleet).locate()
                let refusals = Mutex<[FleetAccess.Attempt]>([])
                let access = try await FleetAccess.open(answer, configuration: fleet) { attempt in
                    refusals.withLock { $0.append(attempt) }
                }
                #expect(access.attempts == 2)
                #expect(access.target.machine == FleetFakes.machines[1])
                #expect(refusals.withLock { $0.map(\.machine) } == [FleetFakes.machines[0]])
                #expect(refusals.withLock { $0.first?.reason.contains("403") } == true)
                var client = world.client(userID: "@fleetref02")
                client.server = access.server
                client.extraString = String(access.attempts)
                let configured = client
                let result = try await access.envelope.guarding {
                    try await ReplayClient(configuration: configured).run(test)
                }
                await access.close()
                let record = try #require(
                    try await world.serverStore.test(TestKey(userID: "@fleetref02", historyCount: result.historyCount)))
                #expect(record.metadata.extraString == "2")
                #expect(fakes.envelopes.upgradeRequests == ["token-1", "token-2"])
                #expect(fakes.envelopes.sessions.map(\.token) == ["token-2"])
            }
        }
    }

    @Test("no envelope opens (refused, hanging past the timeout): noEnvelope naming each server")
    func noEnvelope() async throws {
        try await FleetFakes.run { fakes in
            fakes.offer(fakes.targets())
            fakes.envelopes.setBehaviour(.refuse(status: 401), for: "token-1")
            fakes.envelopes.setBehaviour(.hang, for: "token-2")
            var fleet = fakes.configuration()
            fleet.envelopeTimeout = .seconds(1)
            let answer = try await FleetLocator(configuration: fleet).locate()
            let clock = ContinuousClock()
            let started = clock.now
            let error = await #expect(throws: FleetError.self) {
                _ = try await FleetAccess.open(answer, configuration: fleet)
            }
            // Bounded by the 1 s timeout per server, not by the hanging fake: generous, as a loaded 2-core machine
            // has taken 8.5 s for these two attempts.
            #expect(started.duration(to: clock.now) < .seconds(30))
            #expect(error?.code == .noEnvelope)
            #expect(error?.message.contains(FleetFakes.machines[0]) == true)
            #expect(error?.message.contains("401") == true)
            #expect(error?.message.contains("no answer within 1 s") == true, "\(error?.message ?? "")")
        }
    }

    @Test("locate failures: 503 with an error object, an empty list, garbage, a hang bounded by the timeout")
    func locateFailures() async throws {
        try await FleetFakes.run { fakes in
            let locator = FleetLocator(configuration: fakes.configuration(locateTimeout: .seconds(1)))
            func failure() async -> FleetError? {
                await #expect(throws: FleetError.self) { _ = try await locator.locate() }
            }
            fakes.locate.setAnswer(
                .body(
                    status: 503,
                    text: FakeLocateService.errorBody(
                        status: 503, title: "No servers available", detail: "all wehe servers are busy")))
            let refused = await failure()
            #expect(refused?.code == .locateRefused)
            #expect(refused?.message.contains("503") == true)
            #expect(refused?.message.contains("all wehe servers are busy") == true, "\(refused?.message ?? "")")

            fakes.locate.setAnswer(.body(status: 200, text: #"{"results": []}"#))
            #expect(await failure()?.code == .locateEmpty)

            fakes.locate.setAnswer(.body(status: 200, text: "<html>not json</html>"))
            #expect(await failure()?.code == .locateMalformed)

            fakes.locate.setAnswer(.body(status: 200, text: #"{"results": [{"location": {}}]}"#))
            #expect(await failure()?.code == .locateMalformed)

            fakes.locate.setAnswer(.hang)
            let clock = ContinuousClock()
            let started = clock.now
            let hang = await failure()
            #expect(hang?.code == .locateTimedOut)
            #expect(started.duration(to: clock.now) < .seconds(6))
            #expect(fakes.locate.requests.count == 5)

            let closed = FleetLocator(
                configuration: FleetConfiguration(locateURL: "https://127.0.0.1:1", additionalTrustPEM: fakes.caPEM))
            let unreachable = await #expect(throws: FleetError.self) { _ = try await closed.locate() }
            #expect(unreachable?.code == .locateUnreachable)
        }
    }

    @Test("next_request: no second call before nbf (the answer is reused); after nbf its url is asked")
    func nextRequest() async throws {
        try await FleetFakes.run { fakes in
            let later = Date().addingTimeInterval(3600)
            fakes.offer(
                fakes.targets(),
                nextRequest: (nbf: later, exp: later.addingTimeInterval(600), url: fakes.locate.baseURL + "/next?x=1"))
            let locator = FleetLocator(configuration: fakes.configuration())
            let first = try await locator.locate()
            #expect(first.nextRequest != nil)
            #expect(!first.reused)
            let second = try await locator.locate(previous: first)
            #expect(second.reused)
            #expect(second.targets == first.targets)
            #expect(fakes.locate.requests.count == 1)
            // Between nbf and exp the service's own URL is asked.
            let third = try await locator.locate(previous: first, now: later.addingTimeInterval(1))
            #expect(!third.reused)
            #expect(fakes.locate.requests.map(\.unidentified) == ["/v2/nearest/wehe/replay", "/next?x=1"])
        }
    }

    @Test("the envelope closing in the middle of a test stops it; the server slot is free for the next test")
    func envelopeClosesMidTest() async throws {
        let test = try LoopbackWorld.test("tinycall")
        try await LoopbackWorld.run(address: "127.0.0.63") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let fleet = fakes.configuration(serverAddress: world.address)
                let access = try await FleetAccess.open(
                    try await FleetLocator(configuration: fleet).locate(), configuration: fleet)
                var client = world.client(userID: "@fleetcut03")
                client.server = access.server
                let configured = client
                let envelopes = fakes.envelopes
                let error = await #expect(throws: FleetError.self) {
                    _ = try await access.envelope.guarding {
                        try await ReplayClient(configuration: configured).run(test) { event in
                            if case .replayStarted = event { envelopes.closeAll() }
                        }
                    }
                }
                #expect(error?.code == .envelopeClosed)
                #expect(error?.message.contains("closed during the test") == true)
                #expect(!access.envelope.isOpen)
                // The same address tests again at once: the stopped test no longer holds the server's slot.
                var next = world.client(userID: "@fleetcut03")
                next.server = world.address
                let result = try await ReplayClient(configuration: next).run(try LoopbackWorld.test("tinyweb"))
                #expect(result.verdict != .blocked)
            }
        }
    }
}

/// A measurement, not a check: `WEHE_FLEET_TIMING=20 swift test --skip-build --filter FleetTiming` prints the median
/// time from starting `wehe run tinyweb` to the server's admission of its first replay (the first replay byte follows
/// after the port map and one loopback connect), through the fake locate service and envelope, and directly with
/// `--server` for comparison. Skipped unless the variable is set.
@Suite("Fleet timing (measurement, WEHE_FLEET_TIMING=<runs>)", .serialized)
struct FleetTiming {
    @Test("median time from wehe run to the first replay's admission, fleet path and direct")
    func timing() async throws {
        guard let runs = ProcessInfo.processInfo.environment["WEHE_FLEET_TIMING"].flatMap(Int.init), runs > 0 else {
            return
        }
        try await LoopbackWorld.run(address: "127.0.0.67") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                func measure(_ extra: (String) -> [String]) async throws -> [Double] {
                    var seconds: [Double] = []
                    for _ in 0..<runs {
                        let data = TestResources.temporaryDirectory("wehe-fleet-timing")
                        defer { try? FileManager.default.removeItem(atPath: data) }
                        try? FileManager.default.removeItem(atPath: data + "/locate.json")
                        let started = Date()
                        let run = try await BuiltCommand.run(
                            "wehe", ["run", "tinyweb", "--json", "--cert", world.caPath] + extra(data))
                        #expect(run.status == 0, "\(run.stderr)")
                        let user = try #require(FleetCommandLineTests.userID(data))
                        let admitted = try await world.serverStore.sessionEvents(
                            SessionEventQuery(kinds: [.admissionGranted], limit: 1000)
                        ).filter { $0.userID == user }.map(\.at).min()
                        seconds.append(try #require(admitted).timeIntervalSince(started))
                    }
                    return seconds.sorted()
                }
                let fleet = try await measure { fakes.options(world, data: $0) }
                let direct = try await measure { data in
                    [
                        "--server", world.address, "--replays", TestResources.fixtureReplays, "--data-dir", data,
                        "--side-channel-port", String(world.ports.sideChannelTLS ?? -1), "--analyzer-port",
                        String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
                    ]
                }
                func median(_ values: [Double]) -> String {
                    let middle = values.count / 2
                    let value = values.count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
                    return String(format: "%.1f ms", value * 1000)
                }
                print(
                    "fleet timing (\(runs) runs): locate + envelope median \(median(fleet)) "
                        + "[min \(median([fleet.first ?? 0])), max \(median([fleet.last ?? 0]))]; "
                        + "direct --server median \(median(direct)) "
                        + "[min \(median([direct.first ?? 0])), max \(median([direct.last ?? 0]))]")
            }
        }
    }
}
