import Foundation
import Testing
import WeheTestKit

@Suite("wehe run, results, settings (built binary, no server)")
struct RunCommandTests {
    let fixtures = TestResources.fixtureReplays

    @Test("without consent and without a terminal, run exits 4 with one line")
    func consentRequired() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        let output = try await CommandRunner.run("wehe", ["run", "tinyweb", "--replays", fixtures, "--data-dir", data])
        #expect(output.status == 4)
        #expect(output.stderr.split(separator: "\n").count == 1)
        #expect(output.stderr.contains("--accept-consent"))
    }

    @Test("the consent message follows --lang fr")
    func frenchConsent() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        let output = try await CommandRunner.run(
            "wehe", ["run", "tinyweb", "--replays", fixtures, "--data-dir", data, "--lang", "fr"])
        #expect(output.status == 4)
        #expect(output.stderr.contains("consentement"))
    }

    @Test("an unreachable server exits 5 with one line, and nothing enters the history")
    func unreachable() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        let output = try await CommandRunner.run(
            "wehe",
            [
                "run", "tinyweb", "--replays", fixtures, "--data-dir", data, "--accept-consent", "--server",
                "127.0.0.1",
                "--side-channel-port", "9", "--no-confirmation",
            ])
        #expect(output.status == 5, "\(output.stderr)")
        #expect(output.stderr.hasPrefix("wehe: cannot reach the side channel"))
        let results = try await CommandRunner.run("wehe", ["results", "--data-dir", data])
        #expect(results.status == 0)
        #expect(results.stdout.contains("No results yet"))
    }

    @Test("an unknown test is a usage error: exit 64")
    func unknownTest() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        let output = try await CommandRunner.run(
            "wehe", ["run", "nosuchapp", "--replays", fixtures, "--data-dir", data, "--accept-consent"])
        #expect(output.status == 64)
        #expect(output.stderr.contains("nosuchapp"))
    }

    @Test("settings set / show round trip; an invalid value exits 1")
    func settings() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        #expect(
            try await CommandRunner.run("wehe", ["settings", "set", "area-threshold", "0.4", "--data-dir", data]).status
                == 0)
        #expect(
            try await CommandRunner.run("wehe", ["settings", "set", "server", "192.0.2.7", "--data-dir", data]).status
                == 0)
        let shown = try await CommandRunner.run("wehe", ["settings", "--data-dir", data])
        #expect(shown.stdout.contains("0.4"))
        #expect(shown.stdout.contains("192.0.2.7"))
        #expect(shown.stdout.contains("user-id"))
        let bad = try await CommandRunner.run("wehe", ["settings", "set", "area-threshold", "7", "--data-dir", data])
        #expect(bad.status == 1)
    }

    @Test("results show of an unknown id exits 3")
    func showUnknown() async throws {
        let data = TestResources.temporaryDirectory("wehe-cli")
        #expect(try await CommandRunner.run("wehe", ["results", "show", "42", "--data-dir", data]).status == 3)
    }

    @Test("a wrong option is a usage error: exit 64, as the documented table in --help says")
    func usageError() async throws {
        let output = try await CommandRunner.run("wehe", ["run", "youtube", "--no-such-option"])
        #expect(output.status == 64)
        #expect(output.stderr.contains("--no-such-option"))
        let help = try await CommandRunner.run("wehe", ["help", "exit-codes"])
        #expect(help.stdout.contains("64  usage error"))
    }
}
