import ArgumentParser

/// The `wehe` command: run differentiation tests and look at replays and results.
@main
struct Wehe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe",
        abstract: "Detect whether your network treats some apps' traffic differently (Wehe for Swift).",
        discussion: CLIError.Code.table,
        subcommands: [
            RunCommand.self, ResultsCommand.self, SettingsCommand.self, ReplaysCommand.self, TestbedCommand.self,
        ]
    )
}
