import ArgumentParser

/// `wehe dpi <test>`: a normal test, then — when it finds differentiation — the search for the bytes the
/// classifier matches (analysis.md section 5).
struct DPICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dpi",
        abstract: "Run a test, then find which bytes of the app's traffic the network's classifier matches.",
        discussion: """
            The test first runs as with `wehe run`. If it shows differentiation (or with --force-dpi), the \
            original replay runs again and again, each time with one region of one packet inverted (all 8 bits of \
            each byte; server packets are inverted by the server), and each probe is compared with the test's \
            original: a probe that is no longer throttled broke the classification, so the region holds matching \
            bytes. The search halves such regions down to single bytes and prints the matching bytes (hex and \
            text) with their packet and offset. Each probe costs one replay of the original (its size is printed \
            first): a search usually needs 2·log2(L/4) + 2k probes for a k-byte keyword in an L-byte packet, so \
            set --budget. \(CLIError.Code.pointer)
            """)

    @Argument(help: "The test id from the catalog (pandora, netflix …).")
    var test: String

    @OptionGroup var connection: ServerOptions
    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions
    @OptionGroup(title: "DPI search") var dpi: DPIFlags

    func run() async throws {
        try await DPIStep.$flags.withValue(dpi) {
            try await RunCommand.perform(
                options: options, connection: connection, replays: replays, localization: nil
            ) { _, _ in [test] }
        }
    }
}
