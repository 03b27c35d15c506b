import ArgumentParser

/// The `wehe` command: run differentiation tests and look at replays and results.
@main
struct Wehe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe",
        abstract: "Detect whether your network treats some apps' traffic differently (Wehe for Swift).",
        discussion: """
            Exit codes: 0 success; 1 a checked file or input is invalid; 2 usage error; \
            3 a needed file (trace, catalog) could not be found or read.
            """,
        subcommands: [ReplaysCommand.self, TestbedCommand.self]
    )
}
