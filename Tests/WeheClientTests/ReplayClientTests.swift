import Synchronization
import Testing
import WeheAnalysis
import WeheClient
import WeheCore
import WeheReplay
import WeheStore
import WeheTestKit
import WeheWire

/// Loads fixture tests and builds client configurations pointing at a fake server.
enum Harness {
    static let library = ReplayLibrary(directory: TestResources.fixtureReplays)

    static func test(_ id: String) throws -> ReplayClient.Test {
        try ReplayClient.Test.load(id, from: library, catalog: try library.catalog())
    }

    static func configuration(
        _ server: FakeWeheServer,
        userID: String = "@abc123xyz",
        trust: String = FakeWeheServer.certificatePEM,
        confirmation: Bool = false,
        order: ReplayClientConfiguration.ReplayOrder = .originalFirst,
        counter: InMemoryHistoryCounter = InMemoryHistoryCounter()
    ) -> ReplayClientConfiguration {
        var configuration = ReplayClientConfiguration(
            server: "127.0.0.1", userID: userID, trustedCertificatesPEM: trust,
            sideChannelPort: server.sideChannelPort, analyzerPort: server.analyzerPort, confirmation: confirmation,
            replayOrder: order, historyCounter: counter)
        configuration.timing.firstPollDelay = .milliseconds(20)
        configuration.timing.maximumPollDelay = .milliseconds(100)
        configuration.timing.sideChannelRead = .seconds(10)
        configuration.timing.connect = .seconds(2)
        return configuration
    }

    static func start(_ ids: [String], _ behaviour: FakeWeheServer.Behaviour = .init()) async throws
        -> (FakeWeheServer, [ReplayClient.Test])
    {
        let tests = try ids.map(test)
        let server = try await FakeWeheServer.start(
            traces: tests.flatMap { [$0.original, $0.control] }, behaviour: behaviour)
        return (server, tests)
    }
}

@Suite("ReplayClient against a scripted loopback server", .serialized)
struct ReplayClientTests {
    @Test("TCP app test: the full side-channel exchange, both replays, analysis, verdict, history")
    func tcpAppTest() async throws {
        let (server, tests) = try await Harness.start(["tinyweb"])
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        var configuration = Harness.configuration(server)
        configuration.store = store
        let events = Mutex<[String]>([])
        let result = try await ReplayClient(configuration: configuration).run(tests[0]) { event in
            let name: String
            switch event {
            case .testStarted: name = "testStarted"
            case .replayStarted(_, let role, _, _): name = "replayStarted.\(role)"
            case .replayProgress: return
            case .replayFinished(_, let role, _): name = "replayFinished.\(role)"
            case .portBlocked: name = "portBlocked"
            case .analysisRequested: name = "analysisRequested"
            case .confirmationScheduled: name = "confirmationScheduled"
            case .testFinished: name = "testFinished"
            case .roundFinished: name = "roundFinished"
            case .roundStarted: name = "roundStarted"
            }
            events.withLock { $0.append(name) }
        }
        let state = server.snapshot
        #expect(state.messages.count == 2)
        let first = try #require(state.messages.first)
        #expect(first[0] == "@abc123xyz;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3")
        #expect(Array(first[1...3]) == ["[-1, null, null]", "NoIperf", "NoMobileStats"])
        #expect(first[4].hasPrefix("DONE;"))
        #expect(first[5].hasPrefix("[[") && first[6] == "Result;No")
        #expect(state.messages[1][0] == "@abc123xyz;1;TinyWebRandom-11212026;0;1;True;127.0.0.1;3.3")
        // Both closed; the client does not wait for the server's close_notify, so the server may see it a moment later.
        #expect(await waitUntil { server.snapshot.sideChannelsClosed == 2 })
        #expect(state.tcpConnections == 2)
        #expect(state.analyzeRequests.count == 1)
        #expect(state.analyzeRequests[0]["historyCount"] == "1" && state.analyzeRequests[0]["testID"] == "1")
        #expect(state.queriesAfterSuccess == 0)
        #expect(result.verdict != .blocked)  // loopback throughput decides; no throttler in the path
        #expect(result.bytesReceived == tests[0].original.bytesDown + tests[0].control.bytesDown)
        #expect(result.original?.bytesReceived == 400_000)
        // Δ = min(1 s, 45 s) / 100 = 10 ms; a 0.6 s replay gives about 60 samples plus the partial one.
        #expect(result.original?.sampleInterval == .milliseconds(10))
        #expect((result.originalSamples.count) >= 60)
        #expect(result.original?.scheduleLateness.count == 4)
        #expect(
            events.withLock { $0 } == [
                "testStarted", "replayStarted.original", "replayFinished.original", "replayStarted.control",
                "replayFinished.control", "analysisRequested", "testFinished",
            ])
        let stored = try #require(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 1)))
        #expect(stored.replays.count == 2)
        #expect(stored.mainAnalysis?.summary.verdict == result.verdict)
        #expect(stored.replay(0)?.samples.count == result.originalSamples.count - 1)
    }

    @Test("UDP app test: datagrams echoed, STARTED/DONE drained, samples uploaded")
    func udpAppTest() async throws {
        let (server, tests) = try await Harness.start(["tinycall"])
        defer { Task { await server.stop() } }
        let result = try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
        let state = server.snapshot
        #expect(state.udpDatagrams == tests[0].original.packets.count + tests[0].control.packets.count)
        // Every datagram is echoed; the last echoes may still be in flight when DONE arrives.
        let received = result.original?.bytesReceived ?? 0
        #expect(received <= tests[0].original.bytesUp && received * 10 >= tests[0].original.bytesUp * 9)
        #expect(result.original?.reachedDeadline == false)
        #expect(state.uploads.count == 2)
        #expect(state.messages[0].contains("Result;No"))
        #expect(result.verdict != .blocked)  // loopback throughput decides; no throttler in the path
    }

    @Test("port test: port N then 443, no timing, verdict from the analyzer")
    func portTest() async throws {
        // A 1 MB port replay takes a few milliseconds on loopback: a fine sample grid (Δ = 2 s / 5000 = 0.4 ms)
        // leaves the analyzer whole samples once the server drops the last, partial one.
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.sampleCount = 5000
        let (server, tests) = try await Harness.start(["port8081s"], behaviour)
        defer { Task { await server.stop() } }
        let result = try await ReplayClient(configuration: Harness.configuration(server, order: .random)).run(tests[0])
        let names = Set(server.snapshot.declarations.map(\.replayName))
        #expect(names == ["port_8081", "port_443"])
        #expect(result.isPortTest)
        #expect(result.original?.scheduleLateness.count == 0)
        #expect(result.bytesReceived == 2_000_000)
        #expect([Verdict.noDifferentiation, .inconclusive, .differentiation].contains(result.verdict))
    }

    @Test("port test whose port cannot be reached is blocked: area -1, p -1, control mean kept, no analysis")
    func blockedPort() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.blockedPort = 8081
        behaviour.sampleCount = 5000
        let (server, tests) = try await Harness.start(["port8081s"], behaviour)
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        var configuration = Harness.configuration(server)
        configuration.store = store
        let result = try await ReplayClient(configuration: configuration).run(tests[0])
        #expect(result.verdict == .blocked)
        #expect(result.summary.areaTest == -1 && result.summary.ksPValue == -1)
        #expect(result.summary.originalMeanMbps == 0 && result.summary.controlMeanMbps > 0)
        #expect(server.snapshot.analyzeRequests.isEmpty)
        #expect(
            try await store.test(TestKey(userID: "@abc123xyz", historyCount: 1))?.mainAnalysis?.summary.verdict
                == .blocked)
    }

    @Test("refused admission: each denial code becomes .admissionRefused with its reason", arguments: [1, 2, 3])
    func refusedAdmission(code: Int) async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.permission = code == 2 ? "0;2;100" : "0;\(code)"
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        var configuration = Harness.configuration(server)
        configuration.store = store
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: configuration).run(tests[0])
        }
        #expect(error?.code == .admissionRefused)
        #expect(error?.denial?.rawValue == code)
        #expect(try await store.history(userID: "@abc123xyz", beforeHistoryCount: nil, limit: 10).isEmpty)
    }

    @Test("a server certificate the client does not trust fails with .tlsFailed")
    func untrustedCertificate() async throws {
        let (server, tests) = try await Harness.start(["tinyweb"])
        defer { Task { await server.stop() } }
        let configuration = Harness.configuration(server, trust: FakeWeheServer.otherCertificatePEM)
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: configuration).run(tests[0])
        }
        #expect(error?.code == .tlsFailed)
    }

    @Test("no server listening: .unreachable")
    func unreachable() async throws {
        let (server, tests) = try await Harness.start(["tinyweb"])
        var configuration = Harness.configuration(server)
        await server.stop()
        configuration.sideChannelPort = server.sideChannelPort
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: configuration).run(tests[0])
        }
        #expect(error?.code == .unreachable)
    }

    @Test("a server that stops answering mid-replay: .serverStoppedAnswering, side channel closed, nothing stored")
    func serverStopsAnswering() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.stallReplay = true
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        var configuration = Harness.configuration(server)
        configuration.timing.replayIdle = .milliseconds(300)
        configuration.store = store
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: configuration).run(tests[0])
        }
        #expect(error?.code == .serverStoppedAnswering)
        try await Task.sleep(for: .milliseconds(100))
        #expect(server.snapshot.sideChannelsClosed == 1)
        #expect(try await store.history(userID: "@abc123xyz", beforeHistoryCount: nil, limit: 10).isEmpty)
    }

    @Test("a server that closes with too many bytes missing: .replayFailed")
    func responseIncomplete() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.closeAfterBytes = 1000
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
        }
        #expect(error?.code == .replayFailed)
        #expect(error?.replayError?.code == .responseIncomplete)
    }

    @Test("no port-map entry for the trace's flow: .portMapMissing")
    func portMapMissing() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.omitPortMap = true
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
        }
        #expect(error?.code == .portMapMissing)
    }

    @Test("differentiation triggers one confirmation test with a new history count; only it is stored")
    func confirmation() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0.8
        behaviour.ksPValue = 0.0001
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let store = InMemoryResultStore()
        let counter = InMemoryHistoryCounter(last: 6)
        var configuration = Harness.configuration(server, confirmation: true, counter: counter)
        configuration.store = store
        // Loopback gives tinyweb only a few positive samples; the scripted numbers decide here (the sample minimum
        // is tested in VerdictTrustTests).
        configuration.minimumPositiveSamples = 1
        let result = try await ReplayClient(configuration: configuration).run(tests[0])
        #expect(result.verdict == .differentiation)
        #expect(result.direction != nil)
        #expect(result.confirmed && result.firstVerdict == .differentiation)
        #expect(result.historyCount == 8)
        #expect(server.snapshot.analyzeRequests.map { $0["historyCount"] } == ["7", "8"])
        let history = try await store.history(userID: "@abc123xyz", beforeHistoryCount: nil, limit: 10)
        #expect(history.map(\.key.historyCount) == [8])
    }

    @Test("custom thresholds change the verdict; no confirmation when disabled")
    func thresholds() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.areaTest = 0.4
        behaviour.ksPValue = 0.001
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        var configuration = Harness.configuration(server)
        configuration.verdictRules.customAreaThreshold = 0.3
        configuration.minimumPositiveSamples = 1  // the scripted numbers decide (see `confirmation`)
        let result = try await ReplayClient(configuration: configuration).run(tests[0])
        #expect(result.verdict == .differentiation)
        #expect(result.summary.thresholds.area == 0.3)
        #expect(!result.confirmed)
    }

    @Test("an analyzer answer for another user is rejected with .resultMismatch")
    func resultMismatch() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.analyzerUserID = "@someoneels"
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: Harness.configuration(server)).run(tests[0])
        }
        #expect(error?.code == .resultMismatch)
    }

    @Test("the analyzer never ready: .analyzerFailed after the configured polls")
    func analyzerNeverReady() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.notReadyAnswers = 1000
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        var configuration = Harness.configuration(server)
        configuration.timing.pollAttempts = 4
        let error = await #expect(throws: ReplayClientError.self) {
            try await ReplayClient(configuration: configuration).run(tests[0])
        }
        #expect(error?.code == .analyzerFailed)
        #expect(server.snapshot.resultQueries == 4)
    }

    @Test("cancellation mid-replay: .cancelled, the side channel is closed so the server frees the slot")
    func cancellation() async throws {
        var behaviour = FakeWeheServer.Behaviour()
        behaviour.stallReplay = true
        let (server, tests) = try await Harness.start(["tinyweb"], behaviour)
        defer { Task { await server.stop() } }
        let client = ReplayClient(configuration: Harness.configuration(server))
        let started = Mutex(false)
        let task = Task { () async throws(ReplayClientError) -> TestResult in
            try await client.run(tests[0]) { event in
                if case .replayStarted = event { started.withLock { $0 = true } }
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let result = await task.result
        #expect(throws: ReplayClientError(.cancelled, "")) { try result.get() }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.snapshot.sideChannelsClosed == 1)
    }
}
