import Foundation
import Testing
import WeheTestKit

/// `wehe-server serve` with an option it can only reject after the result store is open: the store is closed before
/// the error is reported (a debug build used to stop on SQLiteNIO's "not closed before deinitializing" assertion,
/// ending with a signal instead of the usage error).
@Suite("wehe-server serve configuration errors")
struct ServeConfigurationErrorTests {
    @Test(
        "a malformed pair option is a usage error with its message, not a crash",
        arguments: [["--localization-pair", "a,b"], ["--localization-site-pair", "lga03"]])
    func malformedPairIsUsageError(option: [String]) async throws {
        let data = TestResources.temporaryDirectory("wehe-server-config-error")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = try await CommandRunner.run(
            "wehe-server",
            ["serve", "--data", data, "--replays", TestResources.fixtureReplays, "--bind", "127.0.0.1"] + option)
        #expect(output.status == 64, "stderr: \(output.stderr)")
        #expect(output.stderr.contains(option[1]))
        #expect(!output.stderr.contains("Fatal error"))
    }

    @Test(
        "the merge-point probe needs its TTL, and the TTL needs the probe: usage errors that say so",
        arguments: [
            (["--merge-point-probe"], "--merge-point-probe needs --merge-point-ttl"),
            (["--merge-point-probe", "--merge-point-ttl", "0"], "--merge-point-probe needs --merge-point-ttl"),
            (["--merge-point-ttl", "2"], "--merge-point-ttl is used only with --merge-point-probe"),
        ])
    func mergePointProbeOptions(option: [String], message: String) async throws {
        let data = TestResources.temporaryDirectory("wehe-server-config-error")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = try await CommandRunner.run(
            "wehe-server",
            ["serve", "--data", data, "--replays", TestResources.fixtureReplays, "--bind", "127.0.0.1"] + option)
        #expect(output.status == 64, "stderr: \(output.stderr)")
        #expect(output.stderr.contains(message), "stderr: \(output.stderr)")
        #expect(!output.stderr.contains("Fatal error"))
    }

    @Test(
        "capture, pair and analysis options that cannot work are usage errors that say why, from the flags or the file",
        arguments: [
            (["--capture-interface", "lo"], "", "--capture-interface needs --pcap"),
            ([], #"{"captureInterface": "lo"}"#, "--capture-interface needs --pcap"),
            (["--pcap", "PCAP", "--capture-interface", "lo", "--capture-snap-length", "10"], "", "between 64 and"),
            (["--pcap", "PCAP"], #"{"captureInterface": "lo", "captureMaxPerNetwork": 0}"#, "at least 1"),
            ([], #"{"localizationPair": ["a,b"]}"#, "a,b"),
            (["--analysis-workers", "0"], "", "--analysis-workers must be at least 1"),
            ([], #"{"analysesPerNetwork": 0}"#, "--analyses-per-network must be at least 1"),
            ([], #"{"analysisQueue": -1}"#, "--analysis-queue must be at least 0"),
        ])
    func captureAndFileOptions(option: [String], file: String, message: String) async throws {
        let data = TestResources.temporaryDirectory("wehe-server-config-error")
        defer { try? FileManager.default.removeItem(atPath: data) }
        var arguments = ["serve", "--data", data, "--replays", TestResources.fixtureReplays, "--bind", "127.0.0.1"]
        arguments += option.map { $0 == "PCAP" ? data + "/pcap" : $0 }
        if !file.isEmpty {
            #expect(TestResources.write(file, to: data + "/config.json"))
            arguments += ["--config", data + "/config.json"]
        }
        let output = try await CommandRunner.run("wehe-server", arguments)
        #expect(output.status == 64, "stderr: \(output.stderr)")
        #expect(output.stderr.contains(message), "stderr: \(output.stderr)")
    }

    @Test(
        "the analysis slots set by flags or the configuration file are the ones the running server logs",
        arguments: [
            (["--analysis-workers", "3", "--analyses-per-network", "1", "--analysis-queue", "10"], ""),
            ([], #"{"analysisWorkers": 5, "analysesPerNetwork": 4, "analysisQueue": 0}"#),
        ])
    func analysisSlotsReachTheServer(option: [String], file: String) async throws {
        let data = TestResources.temporaryDirectory("wehe-server-analysis-slots")
        defer { try? FileManager.default.removeItem(atPath: data) }
        var arguments = [
            "serve", "--data", data, "--replays", TestResources.fixtureReplays, "--bind", "127.0.0.1",
            "--ephemeral-replay-ports", "--side-channel-port", "0", "--side-channel-plain-port", "off",
            "--analyzer-port", "0", "--analyzer-plain-port", "off", "--log-level", "notice",
        ]
        if !file.isEmpty {
            #expect(TestResources.write(file, to: data + "/config.json"))
            arguments += ["--config", data + "/config.json"]
        }
        let server = try RunningProcess("wehe-server", arguments + option, keepingErrors: true)
        // Only when a check above threw: the normal end stops it off the cooperative threads.
        defer { server.stop() }
        let line = try await server.line(containing: "analysis slots")
        let expected =
            file.isEmpty
            ? ["wehe.analyses.running=3", "wehe.analyses.per_network=1", "wehe.analyses.waiting=10"]
            : ["wehe.analyses.running=5", "wehe.analyses.per_network=4", "wehe.analyses.waiting=0"]
        for field in expected { #expect(line.contains(field), "\(line)") }
        // And it serves with them.
        _ = try await server.address(prefix: "wehe-server: listening ")
        try await server.stopOffThread()
    }

    @Test("serve --help lists every option once, under the group of its concern")
    func helpGroups() async throws {
        let output = try await CommandRunner.run("wehe-server", ["serve", "--help"])
        #expect(output.status == 0)
        let help = output.stdout + output.stderr
        let groups = [
            "LISTENERS:", "LIMITS:", "FLEET AND WEHEY LOCALIZATION:", "ARCHIVE AND PCAPS:",
            "PACKET CAPTURE ON AN INTERFACE:", "MEASUREMENTS BESIDE THE REPLAY:", "OPERATOR DASHBOARD:",
        ]
        for group in groups { #expect(help.contains(group), "\(group) missing") }
        for option in [
            "--side-channel-port", "--tls-cert", "--fleet-secret-file", "--archive-uuid-prefix", "--pcap ",
            "--capture-interface", "--loss-sampling-ms", "--dashboard-token-file", "--max-sessions ",
        ] {
            let lines = help.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix(option) }
            #expect(lines.count == 1, "\(option): \(lines)")
        }
    }
}
