import Foundation
import Testing
import WeheTestKit

/// The first mistakes a new user makes get one line with the fix (built binary).
@Suite("first mistakes (built binary)")
struct FirstMistakeTests {
    @Test("a busy dashboard port suggests --port 0")
    func busyDashboardPort() async throws {
        let data = TestResources.temporaryDirectory("wehe-busy-port")
        let first = try RunningProcess(
            "wehe", ["dashboard", "--port", "0", "--data-dir", data, "--replays", TestResources.fixtureReplays])
        defer { first.stop() }
        let address = try await first.address(prefix: "wehe dashboard: ")
        let port = try #require(address.split(separator: ":").last.map { $0.filter(\.isNumber) })
        let second = try await CommandRunner.run(
            "wehe", ["dashboard", "--port", port, "--data-dir", data, "--replays", TestResources.fixtureReplays])
        #expect(second.status == 1, "\(second.stderr)")
        #expect(second.stderr.contains("is busy"), "\(second.stderr)")
        #expect(second.stderr.contains("--port 0"), "\(second.stderr)")
    }

    @Test("settings: the certificate key is named like its option (cert); a missing file is refused")
    func certificateSetting() async throws {
        let data = TestResources.temporaryDirectory("wehe-cert-setting")
        let missing = try await CommandRunner.run(
            "wehe", ["settings", "set", "cert", "/nonexistent/ca.pem", "--data-dir", data])
        #expect(missing.status == 3, "\(missing.stderr)")
        #expect(missing.stderr.contains("no readable file"), "\(missing.stderr)")
        let pem = data + "-ca.pem"
        #expect(TestResources.write("-----BEGIN CERTIFICATE-----\n", to: pem))
        let set = try await CommandRunner.run("wehe", ["settings", "set", "cert", pem, "--data-dir", data])
        #expect(set.status == 0, "\(set.stderr)")
        let shown = try await CommandRunner.run("wehe", ["settings", "--data-dir", data])
        #expect(shown.stdout.contains("cert"))
        #expect(shown.stdout.contains(pem))
        let cleared = try await CommandRunner.run("wehe", ["settings", "set", "cert", "none", "--data-dir", data])
        #expect(cleared.status == 0)
        #expect(!(try await CommandRunner.run("wehe", ["settings", "--data-dir", data]).stdout.contains(pem)))
    }

    @Test("errors and settings follow --lang fr: a French lead, then the detail")
    func frenchErrors() async throws {
        let data = TestResources.temporaryDirectory("wehe-french")
        let refused = try await CommandRunner.run(
            "wehe",
            [
                "run", "tinyweb", "--replays", TestResources.fixtureReplays, "--data-dir", data, "--accept-consent",
                "--server", "127.0.0.1", "--side-channel-port", "9", "--lang", "fr",
            ])
        #expect(refused.status == 5)
        #expect(refused.stderr.hasPrefix("wehe : serveur injoignable — "), "\(refused.stderr)")
        #expect(refused.stderr.contains("127.0.0.1:9"))
        let missing = try await CommandRunner.run(
            "wehe", ["settings", "set", "cert", "/nonexistent.pem", "--data-dir", data, "--lang", "fr"])
        #expect(missing.status == 3)
        #expect(missing.stderr.hasPrefix("wehe : fichier ou répertoire introuvable — "), "\(missing.stderr)")
        let shown = try await CommandRunner.run("wehe", ["settings", "--data-dir", data, "--lang", "fr"])
        #expect(shown.stdout.hasPrefix("RÉGLAGE"), "\(shown.stdout)")
        let english = try await CommandRunner.run(
            "wehe", ["settings", "set", "cert", "/nonexistent.pem", "--data-dir", data, "--lang", "en"])
        #expect(english.stderr.hasPrefix("wehe: cert: no readable file"), "\(english.stderr)")
    }
}
