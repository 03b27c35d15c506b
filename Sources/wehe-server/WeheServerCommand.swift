import ArgumentParser
import WeheCore

/// `wehe-server`: the Wehe replay server and its operator tools.
///
/// Exit codes: 0 success (or graceful shutdown); 1 `serve` failed (a port could not be bound, the replays or
/// certificates could not be read) or `db check` found problems; 2 bad arguments (from ArgumentParser); 3 a
/// database error (the message names the database and the cause).
@main
struct WeheServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe-server",
        abstract: "Wehe replay and analysis server (interoperable with the published Wehe clients) and operator tools.",
        version: "wehe-server \(WeheVersion.number)",
        subcommands: [ServeCommand.self, MLabCommand.self, CertsCommand.self, DBCommand.self]
    )
}
