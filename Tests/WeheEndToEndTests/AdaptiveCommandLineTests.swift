import Foundation
import Testing
import WeheTestKit

/// `wehe run --adaptive` with the built binary against our server in the test process.
@Suite("wehe run --adaptive against our server (built binary)", .timeLimit(.minutes(3)))
struct AdaptiveCommandLineTests {
    @Test("the cost before the test, a line per round, the JSON fields, the history and the summary paragraph")
    func adaptiveRun() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-adaptive")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.19") { world in
            let common = [
                "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", world.address,
                "--cert", world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
                "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent",
            ]
            let run = try await BuiltCommand.run("wehe", ["run", "tinyweb", "--adaptive", "--json"] + common)
            #expect(run.status == 0, "\(run.stderr)")
            // Progress goes to stderr with --json: the cost first, then one line per round.
            #expect(run.stderr.contains("adaptive verdict: short rounds of"), "\(run.stderr)")
            #expect(run.stderr.contains("at most"))
            #expect(run.stderr.contains("round 1"), "\(run.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(object["method"] as? String == "adaptive")
            let stop = try #require(object["stopReason"] as? String)
            #expect(["differentiation", "equivalence", "budget", "time-limit", "long-round-differs"].contains(stop))
            #expect(object["verdict"] as? String == object["sensitiveVerdict"] as? String)
            let rounds = try #require(object["sensitiveRounds"] as? Int)
            #expect(rounds >= 1)
            #expect((object["sensitiveBytes"] as? Int ?? 0) > 0)
            #expect((object["sensitiveDurationSeconds"] as? Double ?? 0) > 0)
            // No area or KS test is computed for an adaptive verdict.
            #expect(object["area"] as? Double == -1)
            #expect(object.keys.contains("slowdownLower") && object.keys.contains("slowdownUpper"))

            let both = try await BuiltCommand.run("wehe", ["run", "tinyweb", "--adaptive", "--published"] + common)
            #expect(both.status == 64, "\(both.stderr)")
            #expect(both.stderr.contains("choose one of --adaptive, --interleaved and --published"))
        }
        let results = try await BuiltCommand.run("wehe", ["results", "--data-dir", data, "--json"])
        #expect(results.status == 0, "\(results.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(results.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["method"] as? String == "adaptive")
        #expect(rows.first?["stopReason"] is String)
        let summary = try await BuiltCommand.run(
            "wehe", ["results", "show", "1", "--summary", "--data-dir", data])
        #expect(summary.status == 0, "\(summary.stderr)")
        #expect(summary.stdout.contains("Adaptive test of"), "\(summary.stdout)")
        #expect(!summary.stdout.contains("area test"), "\(summary.stdout)")
    }
}
