import Foundation
import Synchronization
import Testing
import WeheClient
import WeheServer
import WeheStore
import WeheTestKit

/// WeHeY on a fleet: two of our servers on loopback stand for two M-Lab machines of two sites,
/// behind the fake locate and envelope services. The single-test server's `getServers` answers the site pair; the
/// client locates each site (`?site=`), opens both access envelopes and holds them open for the whole localization.
extension FleetFakes {
    /// The sites of the two machines.
    static let sites = ["tst01", "tst02"]
    /// Their cities, so progress can be checked to name them.
    static let cities = ["Alphaville", "Betatown"]

    /// Locate answers one machine per site (`?site=tst01` → machine 1 with envelope token `site-1`, …), and the
    /// nearest-servers query both machines (tokens `token-1`, `token-2`).
    func offerSites() {
        offer(targets())
        for index in 0..<2 {
            locate.setAnswer(
                .body(
                    status: 200,
                    text: FakeLocateService.body([
                        FakeLocateService.Target(
                            machine: Self.machines[index], city: Self.cities[index],
                            envelopeURL: envelopes.url(token: "site-\(index + 1)"))
                    ])), forSite: Self.sites[index])
        }
    }

    /// The fleet configuration with machine N mapped to `addresses[N]`.
    func configuration(addresses: [String]) -> FleetConfiguration {
        var fleet = configuration()
        fleet.addressOverrides = Dictionary(
            uniqueKeysWithValues: zip(Self.machines, addresses).map { ("wehe-" + $0, $1) })
        return fleet
    }

    /// `wehe` options for this platform in front of `pair` (no `--server`: the default is the fleet).
    func options(_ pair: LoopbackPair, data: String) -> [String] {
        [
            "--replays", TestResources.fixtureReplays, "--data-dir", data, "--locate-url", locate.baseURL,
            "--locate-ca", caPath, "--cert", pair.caPath, "--side-channel-port", String(pair.sideChannelPort),
            "--analyzer-port", String(pair.analyzerPort), "--accept-consent", "--no-confirmation",
        ] + zip(Self.machines, pair.addresses).flatMap { ["--resolve", "wehe-\($0):\($1)"] }
    }

    /// The locate requests for the pair's sites, in order.
    var siteRequests: [String] { locate.requests.map(\.unidentified).filter { $0.contains("site=") } }
}

@Suite("WeHeY over two located machines (fake locate + envelopes, two servers)", .serialized, .timeLimit(.minutes(4)))
struct FleetLocalizationTests {
    static func options(_ fleet: FleetConfiguration) -> LocalizationOptions {
        LocalizationOptions(firstPollDelay: .milliseconds(100), maximumPollDelay: .milliseconds(500), fleet: fleet)
    }

    @Test("a localization through a shared throttler: both sites located, both envelopes open for every step")
    func localization() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        let userID = "@fleetloc01"
        try await LoopbackPair.run(
            servers: ["127.0.0.81", "127.0.0.82"], fronts: ["127.0.0.83", "127.0.0.84"], throttle: test,
            sitePair: FleetFakes.sites
        ) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let configuration = pair.client(userID: userID)
                let single = try await ReplayClient(configuration: configuration).run(test)
                let client = LocalizationClient(
                    configuration: configuration, options: Self.options(fakes.configuration(addresses: pair.addresses)))
                let envelopes = fakes.envelopes
                let seen = Mutex<[(event: String, open: Int)]>([])
                let entered = Mutex<[FleetTarget]>([])
                let located = try await client.localize(
                    test,
                    after: LocalizationClient.SingleTest(
                        server: try client.singleTestServer(), historyCount: single.historyCount)
                ) { event in
                    let name: String
                    switch event {
                    case .pairEntered(let targets):
                        entered.withLock { $0 = targets }
                        name = "entered"
                    case .pairSelected: name = "pair"
                    case .replaysStarted: name = "start"
                    case .replayProgress: return
                    case .replayFinished: name = "done"
                    case .serverVerdicts: name = "verdicts"
                    case .localizationRequested: name = "localize"
                    case .waitingForResult: name = "wait"
                    case .finished: name = "finished"
                    }
                    seen.withLock { $0.append((name, envelopes.openCount)) }
                }
                // Both machines named (machine, city) in the progress, server 1 first; the addresses used are theirs.
                #expect(entered.withLock { $0.map(\.machine) } == FleetFakes.machines)
                #expect(entered.withLock { $0.map(\.place) } == ["Alphaville, ZZ", "Betatown, ZZ"])
                #expect(located.fleetServers.map(\.machine) == FleetFakes.machines)
                #expect(located.servers == pair.addresses)
                #expect(located.historyCounts == [single.historyCount + 1, single.historyCount + 2])
                #expect(
                    fakes.siteRequests == ["/v2/nearest/wehe/replay?site=tst01", "/v2/nearest/wehe/replay?site=tst02"])
                // Both envelopes were open at every step from the pair's entry to the result, and closed once the
                // localization ended.
                let events = seen.withLock { $0 }
                #expect(events.first?.event == "entered")
                #expect(events.last?.event == "finished")
                #expect(events.count >= 10 && events.dropLast().allSatisfy { $0.open == 2 }, "\(events)")
                #expect(await envelopes.wait { $0.count == 2 && $0.allSatisfy { $0.closedAt != nil } })
                let sessions = envelopes.sessions
                #expect(sessions.map(\.token) == ["site-1", "site-2"])
                #expect(sessions.allSatisfy { $0.framesReceived == 0 }, "nothing is sent on the envelopes")
                // Each server's admissions of the pair's replays lie inside both envelopes' lives.
                let opened = try #require(sessions.map(\.openedAt).max())
                let closed = try #require(sessions.compactMap(\.closedAt).min())
                for (index, store) in pair.stores.enumerated() {
                    let admitted = try await store.sessionEvents(
                        SessionEventQuery(kinds: [.admissionGranted], limit: 1000)
                    ).filter { $0.userID == userID && $0.historyCount == located.historyCounts[index] }
                    #expect(admitted.count == 2, "server \(index + 1): \(admitted.count) admissions")
                    #expect(admitted.allSatisfy { $0.at >= opened && $0.at <= closed })
                }
                // The localization is computed when both servers of the pair see differentiation (the single test's
                // verdict does not matter here: the library localizes whatever it is given).
                let verdicts = located.serverSummaries.map(\.verdict)
                guard verdicts == [.differentiation, .differentiation] else {
                    // As in LocalizationEndToEndTests.fullFlow: a loaded 2-core machine sometimes hides the loopback
                    // throttling; the fleet steps above are checked either way.
                    withKnownIssue("loopback throttling not visible in this run's samples", isIntermittent: true) {
                        Issue.record("verdicts \(verdicts): the localization stopped before the statistics")
                    }
                    return
                }
                // Server 1 fetched server 2's samples (a fleet peer) and ran the localization: the result is there.
                let run = try #require(
                    try await pair.stores[0].localization(userID: userID, historyCounts: located.historyCounts))
                let summary = try #require(located.summary, "\(String(describing: located.reason))")
                #expect(summary.mwuPValue != nil && summary.mwuPValue == run.summary?.mwuPValue)
                #expect(summary.simultaneousMeansMbps.count == 2)
                #expect(located.verdict != .inconclusive, "\(String(describing: located.reason))")
                #expect(run.requestedAt >= opened && run.requestedAt <= closed)
            }
        }
    }

    @Test("a site that locates to nothing, one envelope refused, an envelope closing mid-way: inconclusive, closed")
    func failures() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackPair.run(servers: ["127.0.0.85", "127.0.0.86"], sitePair: FleetFakes.sites) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let fleet = fakes.configuration(addresses: pair.addresses)
                func localize(_ userID: String, onEvent: @escaping @Sendable (LocalizationEvent) -> Void = { _ in })
                    async throws -> LocalizationResult
                {
                    let client = LocalizationClient(
                        configuration: pair.client(userID: userID), options: Self.options(fleet))
                    return try await client.localize(
                        test,
                        after: LocalizationClient.SingleTest(server: try client.singleTestServer(), historyCount: 1),
                        onEvent: onEvent)
                }
                let envelopes = fakes.envelopes

                // Site 2 locates to nothing: site 1's envelope, already open, is closed; no test numbers are used.
                fakes.locate.setAnswer(.body(status: 200, text: #"{"results": []}"#), forSite: "tst02")
                let empty = try await localize("@fleetloc02")
                #expect(empty.verdict == .inconclusive)
                #expect(empty.reason?.code == .siteNotLocated)
                #expect(empty.reason?.fleetError == .locateEmpty)
                #expect(
                    empty.reason?.message.contains("site tst02 of the pair") == true, "\(empty.reason?.message ?? "")")
                #expect(empty.historyCounts.isEmpty)
                #expect(await envelopes.wait { $0.count == 1 && $0[0].token == "site-1" && $0[0].closedAt != nil })

                // Site 2's envelope is refused: the same, with the envelope's reason.
                fakes.offerSites()
                envelopes.setBehaviour(.refuse(status: 403), for: "site-2")
                let refused = try await localize("@fleetloc03")
                #expect(refused.reason?.code == .envelopeFailed)
                #expect(refused.reason?.fleetError == .noEnvelope)
                #expect(refused.reason?.message.contains("403") == true, "\(refused.reason?.message ?? "")")
                #expect(refused.reason?.message.contains(FleetFakes.machines[1]) == true)
                #expect(await envelopes.wait { $0.count == 2 && $0.allSatisfy { $0.closedAt != nil } })

                // Site 1's envelope closes during the original replays: the localization stops, the other closes.
                envelopes.setBehaviour(.accept, for: "site-2")
                let cut = try await localize("@fleetloc04") { event in
                    if case .replaysStarted = event { envelopes.closeAll() }
                }
                #expect(cut.verdict == .inconclusive)
                #expect(cut.reason?.code == .envelopeFailed)
                #expect(cut.reason?.fleetError == .envelopeClosed)
                #expect(cut.reason?.message.contains("closed during the test") == true, "\(cut.reason?.message ?? "")")
                #expect(cut.historyCounts.count == 2)
                #expect(await envelopes.wait { $0.count == 4 && $0.allSatisfy { $0.closedAt != nil } })
            }
        }
    }

    @Test("cancelled during the simultaneous replays: the localization throws .cancelled, both envelopes are closed")
    func cancelled() async throws {
        let test = try LoopbackWorld.test("tinycall")
        try await LoopbackPair.run(servers: ["127.0.0.89", "127.0.0.90"], sitePair: FleetFakes.sites) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let client = LocalizationClient(
                    configuration: pair.client(userID: "@fleetloc06"),
                    options: Self.options(fakes.configuration(addresses: pair.addresses)))
                let single = LocalizationClient.SingleTest(server: try client.singleTestServer(), historyCount: 1)
                let replaying = AsyncStream<Void>.makeStream()
                let task = Task {
                    try await client.localize(test, after: single) { event in
                        if case .replaysStarted = event { replaying.continuation.yield() }
                    }
                }
                for await _ in replaying.stream { break }
                #expect(await fakes.envelopes.wait { $0.count == 2 })
                task.cancel()
                let error = await #expect(throws: ReplayClientError.self) { _ = try await task.value }
                #expect(error?.code == .cancelled)
                #expect(await fakes.envelopes.wait { $0.count == 2 && $0.allSatisfy { $0.closedAt != nil } })
            }
        }
    }

    @Test("on the fleet, a getServers answer without a site pair is 'no server pair'; nothing is located")
    func noSitePair() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        // This pair answers only an address pair, which a fleet client does not use (protocol.md 12 step 2).
        try await LoopbackPair.run(servers: ["127.0.0.87", "127.0.0.88"]) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let client = LocalizationClient(
                    configuration: pair.client(userID: "@fleetloc05"),
                    options: Self.options(fakes.configuration(addresses: pair.addresses)))
                let result = try await client.localize(
                    test, after: LocalizationClient.SingleTest(server: try client.singleTestServer(), historyCount: 1))
                #expect(result.verdict == .inconclusive)
                #expect(result.reason?.code == .noServerPair)
                #expect(result.reason?.fleetError == nil)
                #expect(result.reason?.message.contains("server-site-pairs") == true)
                #expect(fakes.locate.requests.isEmpty)
                #expect(fakes.envelopes.upgradeRequests.isEmpty)
            }
        }
    }
}

@Suite("wehe localize on the fleet (built binary, fake locate and envelopes, two servers)", .timeLimit(.minutes(4)))
struct FleetLocalizeCommandTests {
    @Test("wehe localize --force: the single test, then both located servers named, envelopes closed at exit")
    func localize() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.91", "127.0.0.92"], sitePair: FleetFakes.sites) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let run = try await BuiltCommand.run(
                    "wehe", ["localize", "tinyweb", "--force", "--json"] + fakes.options(pair, data: data))
                // Unthrottled loopback: the pair's servers see no differentiation, which is a decided "no evidence".
                #expect(run.status == 0, "\(run.stderr)\n\(run.stdout)")
                // Progress (stderr with --json) names both located machines and their cities.
                #expect(
                    run.stderr.contains(
                        "WeHeY server 1: mlab1-tst01.fleet.test (Alphaville, ZZ), access envelope open"),
                    "\(run.stderr)")
                #expect(
                    run.stderr.contains("WeHeY server 2: mlab2-tst02.fleet.test (Betatown, ZZ), access envelope open"))
                let line = try #require(run.stdout.split(separator: "\n").last)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                #expect(object["kind"] as? String == "localization")
                #expect(object["localization"] as? String != nil)
                #expect(object["historyCounts"] as? [Int] == [2, 3])
                #expect(object["servers"] as? [String] == pair.addresses)
                let fleetServers = try #require(object["fleetServers"] as? [[String: Any]])
                #expect(fleetServers.map { $0["machine"] as? String } == FleetFakes.machines)
                #expect(fleetServers.map { $0["city"] as? String } == FleetFakes.cities)
                #expect(
                    fakes.siteRequests == ["/v2/nearest/wehe/replay?site=tst01", "/v2/nearest/wehe/replay?site=tst02"])
                #expect(
                    await fakes.envelopes.wait { $0.count == 3 && $0.allSatisfy { $0.closedAt != nil } },
                    "every envelope is closed when the command ends")
                let sessions = fakes.envelopes.sessions
                #expect(sessions.map(\.token) == ["token-1", "site-1", "site-2"])
                // The pair's replays ran on both servers while the site envelopes were open.
                let userID = try #require(FleetCommandLineTests.userID(data))
                let open = try #require(sessions.dropFirst().map(\.openedAt).max())
                let close = try #require(sessions.dropFirst().compactMap(\.closedAt).min())
                for (index, store) in pair.stores.enumerated() {
                    let admitted = try await store.sessionEvents(
                        SessionEventQuery(kinds: [.admissionGranted], limit: 1000)
                    ).filter { $0.userID == userID && $0.historyCount == 2 + index }
                    #expect(admitted.count == 2, "server \(index + 1)")
                    #expect(admitted.allSatisfy { $0.at >= open && $0.at <= close })
                }
            }
        }
    }

    @Test("Ctrl-C while the second site is being located: exit 130, the first site's envelope is closed")
    func interrupted() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.97", "127.0.0.98"], sitePair: FleetFakes.sites) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                fakes.locate.setAnswer(.hang, forSite: "tst02")
                let running = try BuiltCommand.start(
                    "wehe", ["localize", "tinyweb", "--force"] + fakes.options(pair, data: data))
                // Site 1's envelope is open and the locate call for site 2 is waiting for its answer.
                let clock = ContinuousClock()
                let giveUp = clock.now.advanced(by: .seconds(30))
                while !fakes.siteRequests.contains(where: { $0.hasSuffix("site=tst02") }), running.process.isRunning,
                    clock.now < giveUp
                {
                    try await clock.sleep(for: .milliseconds(10))
                }
                #expect(fakes.envelopes.sessions.map(\.token) == ["token-1", "site-1"])
                running.process.interrupt()
                let output = try await running.wait()
                #expect(output.status == 130, "\(output.stderr)")
                #expect(await fakes.envelopes.wait { $0.count == 2 && $0.allSatisfy { $0.closedAt != nil } })
            }
        }
    }

    @Test("a site not located exits 31, a refused envelope 9, no site pair 27; one line, the localization printed")
    func failures() async throws {
        let data = TestResources.temporaryDirectory("wehe-fleet-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.93", "127.0.0.94"], sitePair: FleetFakes.sites) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                fakes.locate.setAnswer(.body(status: 200, text: #"{"results": []}"#), forSite: "tst02")
                let empty = try await BuiltCommand.run(
                    "wehe", ["localize", "tinyweb", "--force"] + fakes.options(pair, data: data))
                #expect(empty.status == 31, "\(empty.stderr)")
                #expect(empty.stderr.split(separator: "\n").count == 1, "\(empty.stderr)")
                #expect(empty.stderr.contains("site tst02 of the pair"), "\(empty.stderr)")
                #expect(empty.stdout.contains("Localization: inconclusive"), "\(empty.stdout)")

                fakes.offerSites()
                fakes.envelopes.setBehaviour(.refuse(status: 403), for: "site-2")
                let refused = try await BuiltCommand.run(
                    "wehe", ["localize", "tinyweb", "--force", "--json"] + fakes.options(pair, data: data))
                #expect(refused.status == 9, "\(refused.stderr)")
                #expect(refused.stderr.contains("no access envelope opened"), "\(refused.stderr)")
                let line = try #require(refused.stdout.split(separator: "\n").last)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                #expect((object["reason"] as? [String: Any])?["code"] as? String == "envelope-failed")
                #expect(await fakes.envelopes.wait { $0.allSatisfy { $0.closedAt != nil } })
            }
        }
        // No site pair (the server answers only an address pair): 27, as any localization without a pair.
        try await LoopbackPair.run(servers: ["127.0.0.95", "127.0.0.96"]) { pair in
            try await FleetFakes.run { fakes in
                fakes.offerSites()
                let run = try await BuiltCommand.run(
                    "wehe", ["localize", "tinyweb", "--force"] + fakes.options(pair, data: data))
                #expect(run.status == 27, "\(run.stderr)")
                #expect(run.stdout.contains("no pair of servers is known for your network"), "\(run.stdout)")
                #expect(fakes.siteRequests.isEmpty)
            }
        }
    }
}
