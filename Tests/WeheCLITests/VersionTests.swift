import Testing
import WeheCore

/// `wehe --version` and `wehe-server --version`: one version number, `WeheVersion.number`.
@Suite("Versions")
struct VersionTests {
    @Test("both programs print their name and version and exit 0", arguments: ["wehe", "wehe-server"])
    func version(product: String) async throws {
        let output = try await CommandRunner.run(product, ["--version"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == "\(product) \(WeheVersion.number)\n")
    }
}
