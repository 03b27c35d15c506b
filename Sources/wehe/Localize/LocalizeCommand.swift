import ArgumentParser
import WeheClient
import WeheCore
import WeheWire

/// `wehe localize <test>`: a normal test against the configured server, then — when it finds differentiation, or
/// with `--force` — a WeHeY localization with the server pair that server names (protocol.md section 12).
struct LocalizeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "localize",
        abstract: "Run a test, then locate its differentiation: in your access network or further away (WeHeY).",
        discussion: """
            The test first runs against the configured server. If it shows differentiation (or with --force), that \
            server names a pair of servers whose paths to you meet only in your access network; the original \
            replay then runs to both at once, then the control, and the first server of the pair compares the \
            simultaneous replays with the single one. Verdicts: "the throttling is in your access network", "no \
            evidence that it is in your access network", or "inconclusive" with the reason (exit 27). On the fleet path \
            (no --server), the pair is an M-Lab site pair: each site is located and both servers' access envelopes \
            stay open until the localization ends (a site without a server exits 31, an envelope that does not \
            open 9, one that closes 33). \
            \(CLIError.Code.pointer)
            """)

    @Argument(help: "The test id from the catalog (youtube, netflix …).")
    var test: String

    @OptionGroup var connection: ServerOptions

    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions
    @OptionGroup(title: "Localization") var localization: LocalizationFlags

    func run() async throws {
        try await RunCommand.perform(
            options: options, connection: connection, replays: replays, localization: localization
        ) { _, _ in [test] }
    }
}
