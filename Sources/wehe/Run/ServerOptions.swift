import ArgumentParser

/// The options naming the Wehe server, shared by `wehe run` and `wehe dashboard`.
struct ServerOptions: ParsableArguments {
    @Option(name: .long, help: "Server host name or address (default: settings, else 127.0.0.1).")
    var server: String?

    @Option(name: .long, help: "PEM certificate to trust (the Wehe CA, or your server's certificate).")
    var cert: String?

    @Option(name: .customLong("side-channel-port"), help: "Side-channel port (default 55556).")
    var sideChannelPort: Int = 55556

    @Option(name: .customLong("analyzer-port"), help: "Analyzer port (default 56566).")
    var analyzerPort: Int = 56566

    /// These options and the client options, as plain values.
    func setup(_ options: ClientOptions) -> ClientSetup {
        ClientSetup(
            server: server, certificate: cert, sideChannelPort: sideChannelPort, analyzerPort: analyzerPort,
            rules: options.rules, areaThreshold: options.areaThreshold, pValueThreshold: options.pValueThreshold,
            noConfirmation: options.noConfirmation)
    }
}
