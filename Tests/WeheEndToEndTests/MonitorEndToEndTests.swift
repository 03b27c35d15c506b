import Foundation
import Testing
import WeheStore
import WeheTestKit

/// `wehe monitor` (built binary) against our server on loopback.
@Suite("wehe monitor --once against our server (built binary)", .timeLimit(.minutes(3)))
struct MonitorEndToEndTests {
    /// An allowance below the cheapest test: exit 35, a clear line, nothing sent; then a run marked scheduled whose
    /// bytes the allowance counts, and a changed verdict given to --on-change.
    @Test("allowance too small: refused, nothing sent; a scheduled run counted; a change given to --on-change")
    func scheduledRun() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-monitor")
        let power = TestResources.temporaryDirectory("wehe-e2e-power")
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: power)
        }
        try FileManager.default.createDirectory(atPath: power, withIntermediateDirectories: true)
        let set = try await BuiltCommand.run("wehe", ["settings", "set", "user-id", "e2emon001", "--data-dir", data])
        #expect(set.status == 0, "\(set.stderr)")
        try await LoopbackWorld.run(address: "127.0.0.41", sampleCount: 2000) { world in
            let common = [
                "--replays", TestResources.fixtureReplays, "--data-dir", data, "--server", world.address,
                "--cert", world.caPath, "--side-channel-port", String(world.ports.sideChannelTLS ?? -1),
                "--analyzer-port", String(world.ports.analyzerTLS ?? -1), "--accept-consent", "--no-confirmation",
                "--allow-metered", "--power-supply", power, "--tests", "tinycall", "--published",
            ]
            let refused = try await BuiltCommand.run("wehe", ["monitor", "--once", "--allowance", "1kB"] + common)
            #expect(refused.status == 35, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("wehe: no test fits the monitor's data allowance"), "\(refused.stderr)")
            #expect(refused.stderr.contains("Nothing was sent"))
            // The server saw no test from this user, and the client's history holds none.
            #expect(try await world.serverStore.test(TestKey(userID: "e2emon001", historyCount: 1)) == nil)
            #expect(!FileManager.default.fileExists(atPath: data + "/history.sqlite"))

            let changes = data + "/changes.jsonl"
            let run = try await BuiltCommand.run(
                "wehe", ["monitor", "--once", "--json", "--on-change", "cat >> '\(changes)'"] + common)
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            #expect(object["scheduled"] as? Bool == true)
            #expect(object["test"] as? String == "tinycall")
            let verdict = try #require(object["verdict"] as? String)
            let historyCount = try #require(object["historyCount"] as? Int)
            #expect(try await world.serverStore.test(TestKey(userID: "e2emon001", historyCount: historyCount)) != nil)
            // The history keeps the mark: `wehe results --json` lists the test as scheduled.
            let listed = try await BuiltCommand.run("wehe", ["results", "--json", "--data-dir", data])
            #expect(listed.status == 0, "\(listed.stderr)")
            let rows = try #require(
                try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stdout)"
            )
            #expect(rows.count == 1 && rows.first?["scheduled"] as? Bool == true, "\(rows)")
            // A first verdict has no previous one: no change is said.
            #expect(!FileManager.default.fileExists(atPath: changes))

            let status = try await BuiltCommand.run("wehe", ["monitor", "status", "--json", "--data-dir", data])
            #expect(status.status == 0, "\(status.stderr)")
            let state = try #require(
                try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stdout)")
            let allowance = try #require(state["allowance"] as? [String: Any])
            let used = try #require(allowance["usedBytes"] as? Int)
            // Both replays' bytes both ways: at least the bytes received that the result reports.
            #expect(used > 0 && used >= (object["bytes"] as? Int ?? .max), "\(state)")
            #expect(allowance["leftBytes"] as? Int == 1_000_000_000 - used)
            let runs = try #require(state["lastRuns"] as? [[String: Any]])
            #expect(runs.count == 2)
            #expect((runs.last?["tests"] as? [[String: Any]])?.first?["verdict"] as? String == verdict)

            // The last monitored verdict made the opposite one: the next run with the same verdict is a change.
            // tinycall's datagrams are measured in many intervals: no differentiation on loopback (see the demo's
            // test); the change is checked whenever both runs reached the same conclusive verdict.
            guard verdict == "differentiation" || verdict == "no-differentiation" else { return }
            let opposite = verdict == "differentiation" ? "no-differentiation" : "differentiation"
            let ledgerPath = data + "/monitor.json"
            let ledgerText = try String(contentsOfFile: ledgerPath, encoding: .utf8)
            try ledgerText.replacingOccurrences(
                of: "\"verdict\" : \"\(verdict)\"", with: "\"verdict\" : \"\(opposite)\""
            )
            .write(toFile: ledgerPath, atomically: true, encoding: .utf8)
            let again = try await BuiltCommand.run(
                "wehe", ["monitor", "--once", "--json", "--on-change", "cat >> '\(changes)'"] + common)
            #expect(again.status == 0, "\(again.stderr)")
            let second = try #require(
                try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any], "\(again.stdout)")
            if second["verdict"] as? String == verdict {
                #expect(again.stderr.contains("wehe monitor: tinycall is"), "\(again.stderr)")
                let given = try String(contentsOfFile: changes, encoding: .utf8)
                let lines = given.split(separator: "\n")
                #expect(lines.count == 1, "\(given)")
                let notice = try #require(
                    try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any])
                #expect(notice["scheduled"] as? Bool == true && notice["test"] as? String == "tinycall")
                #expect(notice["historyCount"] as? Int == second["historyCount"] as? Int)
            }
        }
    }

    @Test("install --no-enable writes a oneshot service running monitor --once and a timer; systemd-analyze verify")
    func installUnits() async throws {
        let units = TestResources.temporaryDirectory("wehe-e2e-units")
        let data = TestResources.temporaryDirectory("wehe-e2e-monitor")
        defer {
            try? FileManager.default.removeItem(atPath: units)
            try? FileManager.default.removeItem(atPath: data)
        }
        let install = try await BuiltCommand.run(
            "wehe",
            [
                "monitor", "install", "--unit-directory", units, "--data-dir", data, "--server", "127.0.0.1",
                "--allowance", "500MB", "--quiet-hours", "23-7", "--on-change", "logger \"wehe 100% $USER\"",
            ])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(install.stdout.contains("systemctl --user daemon-reload"))
        let service = try String(contentsOfFile: units + "/wehe-monitor.service", encoding: .utf8)
        let timer = try String(contentsOfFile: units + "/wehe-monitor.timer", encoding: .utf8)
        #expect(service.contains("Type=oneshot"))
        #expect(service.contains("\"monitor\" \"--once\""))
        #expect(service.contains("\"--allowance\" \"500MB\"") && service.contains("\"--quiet-hours\" \"23-7\""))
        // systemd's specifiers and variables are escaped in ExecStart.
        #expect(service.contains("100%% $$USER"), "\(service)")
        #expect(timer.contains("RandomizedDelaySec=6h") && timer.contains("WantedBy=timers.target"))
        if let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) {
            let verify = try await BuiltCommand.run(
                executable: analyze, ["verify", units + "/wehe-monitor.service", units + "/wehe-monitor.timer"])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        } else {
            print("systemd-analyze is not installed: the units' syntax is not verified by systemd here")
        }
        let uninstall = try await BuiltCommand.run("wehe", ["monitor", "uninstall", "--unit-directory", units])
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(!FileManager.default.fileExists(atPath: units + "/wehe-monitor.timer"))
    }

    @Test("without --server the monitor takes the fleet path: locate, an envelope for the test, closed after")
    func throughFleet() async throws {
        let data = TestResources.temporaryDirectory("wehe-e2e-monitor")
        let power = TestResources.temporaryDirectory("wehe-e2e-power")
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: power)
        }
        try FileManager.default.createDirectory(atPath: power, withIntermediateDirectories: true)
        try await LoopbackWorld.run(address: "127.0.0.42", sampleCount: 2000) { world in
            try await FleetFakes.run { fakes in
                fakes.offer(fakes.targets())
                let run = try await BuiltCommand.run(
                    "wehe",
                    [
                        "monitor", "--once", "--json", "--cert", world.caPath, "--allow-metered", "--power-supply",
                        power, "--tests", "tinycall", "--published",
                    ] + fakes.options(world, data: data))
                #expect(run.status == 0, "\(run.stderr)")
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
                #expect(object["scheduled"] as? Bool == true)
                #expect(fakes.locate.requests.map(\.unidentified) == ["/v2/nearest/wehe/replay"])
                #expect(await fakes.envelopes.wait { $0.count == 1 && $0[0].closedAt != nil })
            }
        }
    }
}
