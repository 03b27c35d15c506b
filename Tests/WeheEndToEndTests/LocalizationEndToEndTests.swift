import Foundation
import Testing
import WeheClient
import WeheCore
import WeheStore
import WeheStoreSQL
import WeheTestKit

/// WeHeY with our client and two of our servers in this process (real sockets, TLS, the servers' own
/// `getServers` / `localize` / `localizeResult` and the server-to-server measurement fetch).
@Suite("WeHeY localization: client ↔ a pair of our servers on loopback", .serialized, .timeLimit(.minutes(3)))
struct LocalizationEndToEndTests {
    @Test("through a shared throttler: single test, pair on both servers, localize on server 1, stored both sides")
    func fullFlow() async throws {
        try await LoopbackWorld.withHistory { history in try await checkFullFlow(history: history) }
    }

    private func checkFullFlow(history: SQLResultStore) async throws {
        let test = try LoopbackWorld.test("tinyweb")
        let userID = "@e2eloc001"
        let (single, located, serverRun) = try await LoopbackPair.run(
            servers: ["127.0.0.31", "127.0.0.32"], fronts: ["127.0.0.33", "127.0.0.34"], throttle: test
        ) { pair in
            let configuration = pair.client(userID: userID, store: history)
            let single = try await ReplayClient(configuration: configuration).run(test)
            let client = LocalizationClient(
                configuration: configuration,
                options: LocalizationOptions(firstPollDelay: .milliseconds(100), maximumPollDelay: .milliseconds(500)))
            let located = try await client.localize(
                test,
                after: LocalizationClient.SingleTest(
                    server: try client.singleTestServer(), historyCount: single.historyCount))
            let counts = located.historyCounts
            // Server 1 ran its replay of the pair and computed the localization; server 2 only ran its replay.
            let run = try await pair.stores[0].localization(userID: userID, historyCounts: counts)
            #expect(try await pair.stores[0].test(TestKey(userID: userID, historyCount: counts.first ?? -1)) != nil)
            #expect(try await pair.stores[1].test(TestKey(userID: userID, historyCount: counts.last ?? -1)) != nil)
            return (single, located, run)
        }
        #expect(located.servers == ["127.0.0.33", "127.0.0.34"])
        #expect(located.historyCounts == [single.historyCount + 1, single.historyCount + 2])
        // The userspace throttler slows the original to 1 Mbit/s: the single test and both tests of the pair see it.
        // On a loaded 2-core machine a sub-second loopback trace sometimes does not show it (one failure in about
        // five full runs); the verdicts' accuracy is measured on the kernel testbed, this test checks the pipeline.
        let verdicts = [single.verdict] + located.serverSummaries.map(\.verdict)
        guard verdicts == [.differentiation, .differentiation, .differentiation] else {
            withKnownIssue("loopback throttling not visible in this run's samples", isIntermittent: true) {
                Issue.record("verdicts \(verdicts): the localization stopped before the statistics")
            }
            return
        }
        // Server 1 found server 2's samples (fetched over HTTPS) and the single test's, and ran the throughput-sum
        // test: the result is conclusive, whichever way the noisy loopback samples fall.
        let summary = try #require(located.summary, "\(String(describing: located.reason))")
        #expect(summary.mwuPValue != nil)
        #expect(summary.simultaneousMeansMbps.count == 2)
        #expect(located.verdict != .inconclusive, "\(String(describing: located.reason))")
        #expect(serverRun?.summary?.mwuPValue == summary.mwuPValue)
        let stored = try #require(
            try await history.localization(userID: userID, historyCounts: located.historyCounts))
        #expect(stored.summary?.verdict == located.verdict)
        #expect(stored.singleHistoryCount == single.historyCount)
    }

    @Test("a UDP test: after the simultaneous originals each server holds the client-reported loss timeline")
    func udpLossTimelines() async throws {
        let test = try LoopbackWorld.test("tinycall")
        let userID = "@e2eloc002"
        try await LoopbackPair.run(servers: ["127.0.0.41", "127.0.0.42"]) { pair in
            let configuration = pair.client(userID: userID)
            let client = LocalizationClient(
                configuration: configuration,
                options: LocalizationOptions(firstPollDelay: .milliseconds(100), maximumPollDelay: .milliseconds(500)))
            // Forced after a (pretend) single test 1: nothing is throttled, so the run ends with the servers' own
            // verdicts, but the reports are sent right after the original replays.
            let located = try await client.localize(
                test, after: LocalizationClient.SingleTest(server: try client.singleTestServer(), historyCount: 1))
            #expect(located.historyCounts.count == 2, "\(String(describing: located.reason))")
            for (index, count) in located.historyCounts.enumerated() {
                let key = ReplayKey(userID: userID, historyCount: count, testID: 0)
                let record = try #require(try await pair.stores[index].loss(key), "no loss timeline on server \(index)")
                #expect(record.source == .clientReport)
                #expect(record.samples.count == test.original.packets.count)
                // Loopback loses next to nothing. Under full-suite load a few datagrams can still be in flight when
                // the client stops reading at the server's DONE; they count as lost (seen once in CI).
                let lost = record.samples.filter { $0.bytesLost > 0 }.count
                #expect(lost * 20 <= record.samples.count, "\(lost) of \(record.samples.count) datagrams lost")
                #expect(record.samples.allSatisfy { $0.bytesLost == 0 || $0.bytesLost == $0.bytesSent })
                #expect(record.minimumRTT != nil)
                // The control replay was not reported: the loss test compares the originals only.
                #expect(
                    try await pair.stores[index].loss(ReplayKey(userID: userID, historyCount: count, testID: 1)) == nil)
            }
        }
    }

    @Test("wehe localize --force with server 2 down: exit 27, the reason, and an inconclusive row in results")
    func secondServerDown() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.35"], pairAddresses: ["127.0.0.35", "127.0.0.36"]) { pair in
            let run = try await BuiltCommand.run(
                "wehe",
                [
                    "localize", "tinyweb", "--force", "--replays", TestResources.fixtureReplays, "--data-dir", data,
                    "--server", pair.addresses[0], "--cert", pair.caPath, "--side-channel-port",
                    String(pair.sideChannelPort), "--analyzer-port", String(pair.analyzerPort), "--accept-consent",
                    "--no-confirmation",
                ])
            #expect(run.status == 27, "\(run.stderr)")
            #expect(run.stdout.contains("Localization: inconclusive (a server could not be reached)"), "\(run.stdout)")
            #expect(run.stdout.contains("127.0.0.36"))
            let french = try await BuiltCommand.run(
                "wehe", ["results", "show", "2", "--data-dir", data, "--lang", "fr"])
            #expect(french.status == 0, "\(french.stderr)")
            #expect(french.stdout.contains("Localisation : non concluant"), "\(french.stdout)")
        }
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        #expect(results.status == 0, "\(results.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(results.stdout.utf8)) as? [[String: Any]])
        let localization = try #require(rows.first { $0["kind"] as? String == "localization" })
        #expect(localization["localization"] as? String == "inconclusive")
        #expect(localization["id"] as? String == "2+3")
        #expect((localization["note"] as? String)?.contains("server-unreachable") == true)
        #expect(rows.filter { $0["kind"] as? String == "test" }.count == 1)
        let table = try await BuiltCommand.run("wehe", ["results", "--data-dir", data])
        #expect(table.stdout.contains("LOCALIZATION") && table.stdout.contains("2+3"), "\(table.stdout)")
    }

    @Test("wehe run --localize --force --json: the test's line, then a localization line; exit 27 when inconclusive")
    func runLocalize() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.39"], pairAddresses: ["127.0.0.39", "127.0.0.40"]) { pair in
            let run = try await BuiltCommand.run(
                "wehe",
                [
                    "run", "tinyweb", "--localize", "--force", "--json", "--replays", TestResources.fixtureReplays,
                    "--data-dir", data, "--server", pair.addresses[0], "--cert", pair.caPath, "--side-channel-port",
                    String(pair.sideChannelPort), "--analyzer-port", String(pair.analyzerPort), "--accept-consent",
                    "--no-confirmation",
                ])
            #expect(run.status == 27, "\(run.stderr)")
            let objects = try run.stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            #expect(objects.count == 2)
            #expect(objects.first?["test"] as? String == "tinyweb")
            #expect(objects.last?["kind"] as? String == "localization")
            #expect(objects.last?["localization"] as? String == "inconclusive")
            #expect((objects.last?["reason"] as? [String: Any])?["code"] as? String == "server-unreachable")
            #expect(objects.last?["historyCounts"] as? [Int] == [2, 3])
        }
    }

    @Test("wehe localize without --force after a test with no differentiation: skipped, exit 0, nothing stored")
    func skipped() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-localize")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackPair.run(servers: ["127.0.0.37", "127.0.0.38"]) { pair in
            // An area threshold of 1 can never be exceeded by the fixtures' unthrottled replays: no differentiation.
            let run = try await BuiltCommand.run(
                "wehe",
                [
                    "localize", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", data,
                    "--server", pair.addresses[0], "--cert", pair.caPath, "--side-channel-port",
                    String(pair.sideChannelPort), "--analyzer-port", String(pair.analyzerPort), "--accept-consent",
                    "--no-confirmation", "--area-threshold", "1", "--json",
                ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("localization skipped"), "\(run.stderr)")
            #expect(!run.stdout.contains("\"localization\""))
        }
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(results.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows.first?["kind"] as? String == "test")
    }
}
