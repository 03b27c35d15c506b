import Foundation
import Synchronization
import Testing
import WeheAnalysis
import WeheClient
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// Our client against our server, both in this process, over real sockets on 127.0.0.x with TLS: the whole
/// protocol (side channel, replays, samples, analyzer) with nothing faked.
@Suite("client ↔ server on loopback", .timeLimit(.minutes(6)))
struct ClientServerTests {
    @Test("TCP app test: both replays reach the server, the analyzer's verdict is stored in the SQLite history")
    func tcpAppTest() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackWorld.withHistory { history in
            let phases = Mutex<[String]>([])
            let result = try await LoopbackWorld.run(address: "127.0.0.11") { world in
                let configuration = world.client(userID: "@e2etcp001", store: history)
                let result = try await ReplayClient(configuration: configuration).run(test) { event in
                    switch event {
                    case .replayFinished(_, let role, _): phases.withLock { $0.append("finished.\(role)") }
                    case .analysisRequested: phases.withLock { $0.append("analysis") }
                    default: break
                    }
                }
                // The server recorded both replays of this test with the client's samples.
                let serverRecord = try #require(
                    try await world.serverStore.test(TestKey(userID: "@e2etcp001", historyCount: result.historyCount)))
                #expect(Set(serverRecord.replays.map(\.replayName)) == ["TinyWeb-11212026", "TinyWebRandom-11212026"])
                #expect(serverRecord.replays.allSatisfy { !$0.samples.mbps.isEmpty })
                return result
            }
            // Loopback throughput of a 0.6 s trace on a loaded machine is noisy: the verdict is whatever the analyzer
            // decides (no throttler is in the path, so never "blocked"); it must be the one stored in the history.
            #expect(result.verdict != .blocked)
            #expect(result.original?.bytesReceived == test.original.bytesDown)
            #expect(result.control?.bytesReceived == test.control.bytesDown)
            #expect(result.summary.originalMeanMbps > 0 && result.summary.controlMeanMbps > 0)
            #expect(result.summary.ksPValue >= 0 && result.summary.ksPValue <= 1)
            #expect(Set(phases.withLock { $0 }) == ["finished.original", "finished.control", "analysis"])
            let rows = try await history.history(userID: "@e2etcp001", beforeHistoryCount: nil, limit: 10)
            #expect(rows.count == 1)
            #expect(rows.first?.analysis?.verdict == result.verdict)
            #expect(rows.first?.metadata.replayName == "TinyWeb-11212026")
            let stored = try #require(try await history.test(TestKey(userID: "@e2etcp001", historyCount: 1)))
            #expect(stored.replays.count == 2)
        }
    }

    @Test(
        "the client's verdict is the server's for the same samples, too few measurements included",
        arguments: [("tinyweb", 0), ("port8081s", 3), ("tinycall", 0)])
    func verdictMatchesServer(test id: String, sampleCount: Int) async throws {
        let test = try LoopbackWorld.test(id)
        // port8081s with 3 samples over 2 s: 1 MB crosses loopback within the first sample, nothing to analyse.
        let address =
            ["tinyweb": "127.0.0.31", "port8081s": "127.0.0.32", "tinycall": "127.0.0.33"][id] ?? "127.0.0.34"
        let (result, server) = try await LoopbackWorld.run(
            address: address, sampleCount: sampleCount > 0 ? sampleCount : 100
        ) { world in
            var configuration = world.client(userID: "@verdict01")
            configuration.confirmation = false
            let result = try await ReplayClient(configuration: configuration).run(test)
            let record = try await world.serverStore.test(
                TestKey(userID: "@verdict01", historyCount: result.historyCount))
            return (result, record?.mainAnalysis?.summary)
        }
        let serverSummary = try #require(server)
        #expect(result.verdict == serverSummary.verdict, "client \(result.summary), server \(serverSummary)")
        #expect(result.summary.insufficientDataReason == serverSummary.insufficientDataReason)
        if id == "port8081s" {
            #expect(result.verdict == .inconclusive)
            #expect(result.summary.insufficientDataReason?.hasPrefix("too few measurements") == true)
        }
    }

    @Test("UDP app test: datagrams both ways, STARTED/DONE on the side channel, a verdict from the analyzer")
    func udpAppTest() async throws {
        let test = try LoopbackWorld.test("tinycall")
        let result = try await LoopbackWorld.run(address: "127.0.0.12") { world in
            try await ReplayClient(configuration: world.client()).run(test)
        }
        #expect(result.verdict != .blocked)
        // The server streams the recorded server datagrams; the client counts what it received.
        #expect((result.original?.bytesReceived ?? 0) > 0 && (result.control?.bytesReceived ?? 0) > 0)
        #expect(result.original?.reachedDeadline == false)
        #expect(result.summary.originalMeanMbps > 0)
    }

    @Test("port test: port 8081 then 443 (either order), sent as fast as possible, verdict from the analyzer")
    func portTest() async throws {
        let test = try LoopbackWorld.test("port8081s")
        // 1 MB crosses loopback in milliseconds: a fine sample grid leaves whole samples for the analyzer.
        let result = try await LoopbackWorld.run(address: "127.0.0.13", sampleCount: 5000) { world in
            try await ReplayClient(configuration: world.client()).run(test)
        }
        #expect(result.isPortTest)
        #expect(result.bytesReceived == test.original.bytesDown + test.control.bytesDown)
        #expect(result.original?.scheduleLateness.count == 0)
        #expect([Verdict.noDifferentiation, .inconclusive, .differentiation].contains(result.verdict))
        #expect(result.summary.originalMeanMbps > 0 && result.summary.controlMeanMbps > 0)
    }

    @Test("a port whose address check fails is blocked: the control still runs, no analysis, stored as blocked")
    func blockedPort() async throws {
        let test = try LoopbackWorld.test("port8081s")
        try await LoopbackWorld.withHistory { history in
            let result = try await LoopbackWorld.run(address: "127.0.0.14") { world in
                // The server's listeners sit at recorded port + offset; WHATSMYIPMAN on the recorded port 8081 of
                // 127.0.0.14 finds nobody, which is what a network blocking the port looks like to the client.
                var configuration = world.client(userID: "@e2eblock01", store: history)
                configuration.addressDiscovery = .always
                configuration.timing.addressAttempts = 1
                return try await ReplayClient(configuration: configuration).run(test)
            }
            #expect(result.verdict == .blocked)
            #expect(result.original == nil)
            #expect((result.control?.bytesReceived ?? 0) == test.control.bytesDown)
            #expect(result.summary.areaTest == -1 && result.summary.ksPValue == -1)
            let stored = try await history.history(userID: "@e2eblock01", beforeHistoryCount: nil, limit: 5)
            #expect(stored.first?.analysis?.verdict == .blocked)
        }
    }

    @Test("a refused admission (another test from the same address) fails with .admissionRefused, code 2")
    func busyAddress() async throws {
        let test = try LoopbackWorld.test("tinyweb")
        try await LoopbackWorld.run(address: "127.0.0.15") { world in
            // Two clients from one address at once: the published rule admits one test per address. The second
            // starts once the first is replaying (its first progress report).
            let (replaying, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            async let first = ReplayClient(configuration: world.client(userID: "@e2ebusy01")).run(test) { event in
                if case .replayProgress = event { signal.yield() }
            }
            var reports = replaying.makeAsyncIterator()
            _ = await reports.next()
            do {
                _ = try await ReplayClient(configuration: world.client(userID: "@e2ebusy02")).run(test)
                Issue.record("the second test was admitted")
            } catch let error as ReplayClientError {
                #expect(error.code == .admissionRefused)
                #expect(error.denial?.rawValue == 2)
            }
            #expect(try await first.verdict != .blocked)  // the first test completes; its loopback verdict may vary
        }
    }
}
