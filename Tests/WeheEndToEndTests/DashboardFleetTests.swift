import Foundation
import Testing
import WeheTestKit

/// `wehe dashboard`'s "new test" page on the fleet path: each test it launches opens its own access envelope (as
/// `wehe run` does for each test), from a locate answer of its own, and closes it when that test ends.
@Suite("wehe dashboard through the fleet (built binary, fake locate and envelope)", .timeLimit(.minutes(3)))
struct DashboardFleetTests {
    @Test("two tests launched from the dashboard: one envelope each, each closed when its test ended")
    func envelopePerLaunchedTest() async throws {
        let data = TestResources.temporaryDirectory("wehe-dashboard-fleet")
        defer { try? FileManager.default.removeItem(atPath: data) }
        try await LoopbackWorld.run(address: "127.0.0.66") { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets(["token-1", "token-2", "token-3", "token-4"]))
                let dashboard = try BuiltCommand.start(
                    "wehe", ["dashboard", "--port", "0", "--cert", world.caPath] + fakes.options(world, data: data))
                defer { dashboard.process.terminate() }
                var base = ""
                let clock = ContinuousClock()
                let deadline = clock.now.advanced(by: .seconds(30))
                while base.isEmpty, clock.now < deadline {
                    if let line = dashboard.stdoutSoFar.split(separator: "\n").first(where: {
                        $0.hasPrefix("wehe dashboard: ")
                    }) {
                        base = String(line.dropFirst("wehe dashboard: ".count))
                    } else {
                        try await clock.sleep(for: .milliseconds(100))
                    }
                }
                try #require(!base.isEmpty, "the dashboard did not print its address")
                if !base.hasSuffix("/") { base += "/" }
                for launched in 1...2 {
                    let runID = try await Self.launch(base + "run", form: "test=tinyweb&lang=en")
                    var state = ""
                    var body = ""
                    while state != "finished", state != "failed", clock.now < deadline.advanced(by: .seconds(90)) {
                        try await clock.sleep(for: .milliseconds(250))
                        body = try await Self.get(base + "api/runs/" + runID)
                        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                        state = object?["state"] as? String ?? ""
                    }
                    #expect(state == "finished", "run \(launched) ended as \(state): \(body)")
                    // The envelope of this test is closed once it ended, before the next test is launched.
                    #expect(
                        await fakes.envelopes.wait { $0.count == launched && $0.allSatisfy { $0.closedAt != nil } },
                        "after test \(launched): \(fakes.envelopes.sessions.map(\.token))")
                }
                let sessions = fakes.envelopes.sessions
                #expect(sessions.count == 2, "one envelope per launched test: \(sessions.map(\.token))")
                // Launches are the person's, minutes apart, and tokens live a minute: each launch asks locate afresh
                // (this fake answers every request with the same offer, so the tokens repeat across answers).
                #expect(fakes.locate.requests.count == 2, "one locate answer per launch")
            }
        }
    }

    /// Posts the launch form; returns the run's id (the last path component the redirect ends at).
    static func launch(_ address: String, form: String) async throws -> String {
        let response = try await LoopbackHTTP.post(address, form: form)
        #expect(response.status == 200)
        return try #require(URL(string: response.url)?.lastPathComponent)
    }

    static func get(_ address: String) async throws -> String {
        try await LoopbackHTTP.get(address).body
    }
}
