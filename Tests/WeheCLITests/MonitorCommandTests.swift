import Foundation
import Testing
import WeheTestKit

/// `wehe monitor` (built binary) without a server: the guards and the daily cap skip a run before anything is sent,
/// and the settings keep the monitor's options.
@Suite("wehe monitor guards and settings (built binary)")
struct MonitorCommandTests {
    let fixtures = TestResources.fixtureReplays

    @Test("a metered connection (a fake nmcli), a low battery, quiet hours and the daily cap each skip the run")
    func guardsSkip() async throws {
        let data = TestResources.temporaryDirectory("wehe-monitor-cli")
        let bin = TestResources.temporaryDirectory("wehe-monitor-bin")
        let power = TestResources.temporaryDirectory("wehe-monitor-power")
        defer {
            for path in [data, bin, power] { try? FileManager.default.removeItem(atPath: path) }
        }
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: power + "/BAT0", withIntermediateDirectories: true)
        #expect(
            TestResources.write(
                "#!/bin/sh\nprintf 'GENERAL.DEVICE:wlan0\\nGENERAL.STATE:100 (connected)\\nGENERAL.METERED:yes\\n'\n",
                to: bin + "/nmcli"))
        #expect(chmod(bin + "/nmcli", 0o755) == 0)
        #expect(TestResources.write("Battery\n", to: power + "/BAT0/type"))
        #expect(TestResources.write("12\n", to: power + "/BAT0/capacity"))
        #expect(TestResources.write("Discharging\n", to: power + "/BAT0/status"))
        let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let common = ["--replays", fixtures, "--data-dir", data, "--server", "127.0.0.1", "--accept-consent"]

        let metered = try await CommandRunner.run("wehe", ["monitor", "--once"] + common, environment: ["PATH": path])
        #expect(metered.status == 0, "\(metered.stderr)")
        #expect(metered.stdout.contains("no run now: the connection is metered (wlan0)"), "\(metered.stdout)")

        let battery = try await CommandRunner.run(
            "wehe", ["monitor", "--once", "--allow-metered", "--power-supply", power] + common,
            environment: ["PATH": path])
        #expect(battery.stdout.contains("the battery is at 12 % and not charging"), "\(battery.stdout)")

        // Quiet hours are a range of whole hours, the last one excluded (`0-23` is not quiet from 23:00 on): the
        // range starts at the hour this runs in and lasts two hours, so an hour turning during the run stays inside.
        let hour = Calendar.current.component(.hour, from: Date())
        let hours = "\(hour)-\((hour + 2) % 24)"
        let quiet = try await CommandRunner.run(
            "wehe", ["monitor", "--once", "--allow-metered", "--quiet-hours", hours] + common)
        #expect(quiet.status == 0 && quiet.stdout.contains("no run now: quiet hours \(hours)"), "\(quiet.stdout)")

        // Four runs made today: the fifth is skipped. "Today" is the calendar day the monitor reads its clock in, so a
        // midnight between writing the ledger and the run would make the four yesterday's: then it is done again.
        var capped = CommandRunner.Output(status: -1, stdout: "", stderr: "")
        for _ in 0..<2 {
            let written = Date()
            let now = ISO8601DateFormatter().string(from: written)
            let run = """
                {"startedAt": "\(now)", "bytes": 10, "outcomes": [{"test": "tinyweb", "verdict": "inconclusive",
                 "provider": "p", "historyCount": 1, "bytes": 10}]}
                """
            let ledger = "{\"usedBytes\": 40, \"runs\": [\(Array(repeating: run, count: 4).joined(separator: ","))]}"
            #expect(TestResources.write(ledger, to: data + "/monitor.json"))
            capped = try await CommandRunner.run("wehe", ["monitor", "--once", "--allow-metered"] + common)
            if Calendar.current.isDate(written, inSameDayAs: Date()) { break }
        }
        #expect(capped.status == 0 && capped.stdout.contains("runs were already made today"), "\(capped.stdout)")
        // Nothing ran: no history, and the ledger kept its four runs.
        #expect(!FileManager.default.fileExists(atPath: data + "/history.sqlite"))
        let status = try await CommandRunner.run("wehe", ["monitor", "status", "--json", "--data-dir", data])
        let state = try #require(
            try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stdout)")
        #expect((state["lastRuns"] as? [Any])?.count == 4)
    }

    @Test("settings keep the allowance, quiet hours and tests; bad values are refused with the key named")
    func settings() async throws {
        let data = TestResources.temporaryDirectory("wehe-monitor-settings")
        defer { try? FileManager.default.removeItem(atPath: data) }
        for (key, value) in [("allowance", "2GB"), ("quiet-hours", "22-6"), ("monitor-tests", "tinyweb,tinycall")] {
            let set = try await CommandRunner.run("wehe", ["settings", "set", key, value, "--data-dir", data])
            #expect(set.status == 0, "\(set.stderr)")
        }
        let status = try await CommandRunner.run("wehe", ["monitor", "status", "--json", "--data-dir", data])
        let state = try #require(
            try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stdout)")
        #expect((state["allowance"] as? [String: Any])?["monthlyBytes"] as? Int == 2_000_000_000)
        #expect(((state["guards"] as? [String: Any])?["quietHours"] as? String)?.hasPrefix("22-6") == true)
        let bad = try await CommandRunner.run("wehe", ["settings", "set", "allowance", "lots", "--data-dir", data])
        #expect(bad.status == 1 && bad.stderr.contains("allowance"), "\(bad.stderr)")
        let badHours = try await CommandRunner.run(
            "wehe", ["settings", "set", "quiet-hours", "25-3", "--data-dir", data])
        #expect(badHours.status == 1, "\(badHours.stderr)")
    }

    @Test("a spent allowance refuses the run with exit 35 and says when it renews; nothing is sent or recorded")
    func spentAllowance() async throws {
        let data = TestResources.temporaryDirectory("wehe-monitor-spent")
        let power = TestResources.temporaryDirectory("wehe-monitor-power")
        defer {
            for path in [data, power] { try? FileManager.default.removeItem(atPath: path) }
        }
        try FileManager.default.createDirectory(atPath: power, withIntermediateDirectories: true)
        let month = try #require(Calendar.current.dateInterval(of: .month, for: Date()))
        let start = ISO8601DateFormatter().string(from: month.start)
        #expect(
            TestResources.write(
                "{\"periodStart\": \"\(start)\", \"usedBytes\": 1000000000, \"runs\": []}",
                to: data + "/monitor.json"))
        // Nothing listens on this port: a run that tried to send anything would fail with another code.
        let refused = try await CommandRunner.run(
            "wehe",
            [
                "monitor", "--once", "--replays", fixtures, "--data-dir", data, "--server", "127.0.0.1",
                "--side-channel-port", "9", "--accept-consent", "--allow-metered", "--power-supply", power,
            ])
        #expect(refused.status == 35, "\(refused.stdout) \(refused.stderr)")
        let day = ISO8601DateFormatter.string(
            from: month.end, timeZone: Calendar.current.timeZone, formatOptions: [.withFullDate])
        #expect(refused.stderr.contains("is spent for this month; it renews on \(day)"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data + "/history.sqlite"))
    }
}
