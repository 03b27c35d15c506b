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
    func malformedPairIsUsageError(option: [String]) throws {
        let data = TestResources.temporaryDirectory("wehe-server-config-error")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = try CommandRunner.run(
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
    func mergePointProbeOptions(option: [String], message: String) throws {
        let data = TestResources.temporaryDirectory("wehe-server-config-error")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = try CommandRunner.run(
            "wehe-server",
            ["serve", "--data", data, "--replays", TestResources.fixtureReplays, "--bind", "127.0.0.1"] + option)
        #expect(output.status == 64, "stderr: \(output.stderr)")
        #expect(output.stderr.contains(message), "stderr: \(output.stderr)")
        #expect(!output.stderr.contains("Fatal error"))
    }
}
