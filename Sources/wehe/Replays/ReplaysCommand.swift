import ArgumentParser

/// `wehe replays …`: the catalog and the trace files.
struct ReplaysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replays",
        abstract: "List, inspect and validate replay traces.",
        subcommands: [ListReplays.self, ShowReplay.self, ValidateReplays.self],
        defaultSubcommand: ListReplays.self
    )
}
