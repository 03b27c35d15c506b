import ArgumentParser

/// The `wehe-server` command: the replay and analysis server and its operator tools.
@main
struct WeheServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe-server",
        abstract: "The Wehe replay and analysis server (interoperable with the published Wehe clients).",
        discussion: """
            Exit codes: 0 success (or graceful shutdown); 1 the server failed (a port could not be bound, the \
            replays or certificates could not be read); 2 usage error.
            """,
        subcommands: [ServeCommand.self, CertsCommand.self]
    )
}
