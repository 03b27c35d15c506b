import ArgumentParser

/// `wehe-server`: the Wehe replay server and its operator tools.
///
/// Exit codes: 0 success; 1 `db check` found problems; 2 bad arguments (from ArgumentParser); 3 a database
/// error (the message names the database and the cause).
@main
struct WeheServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe-server",
        abstract: "Wehe replay server and operator tools.",
        subcommands: [DBCommand.self]
    )
}
