import ArgumentParser

/// The options naming the Wehe server, shared by `wehe run`, `wehe localize`, `wehe servers` and `wehe dashboard`.
struct ServerOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Server host name or address; bypasses locate (default: settings, else the public fleet).",
            discussion:
                "wehe4.meddle.mobi (the published clients' default) means the public fleet, like --mlab."))
    var server: String?

    @Flag(name: .long, help: "Find a server of the fleet through the locate service (the default server setting).")
    var mlab = false

    @Option(
        name: .customLong("locate-url"), help: "Locate service base URL (default https://locate.measurementlab.net).")
    var locateURL: String?

    @Option(
        name: .customLong("locate-ca"),
        help: "PEM CA trusted next to the system's roots for the locate service and access envelopes.")
    var locateCA: String?

    @Option(
        name: .customLong("locate-token-file"),
        help: "File holding an M-Lab priority-access token: locate is asked at /v2/priority/nearest with it.")
    var locateTokenFile: String?

    @Option(name: .long, help: "Ask locate for servers of this site only (e.g. lga03).")
    var site: String?

    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp(
            "Connect to <address> for <host> (repeatable, like curl's --resolve).", valueName: "host:address"))
    var resolve: [String] = []

    @Option(
        name: .long,
        help: "PEM certificate to trust (default for the fleet: the Wehe CA, wehe-ca.pem; else your server's CA).")
    var cert: String?

    @Option(name: .customLong("side-channel-port"), help: "Side-channel port (default 55556).")
    var sideChannelPort: Int = 55556

    @Option(name: .customLong("analyzer-port"), help: "Analyzer port (default 56566).")
    var analyzerPort: Int = 56566

    /// These options and the client options (defaults without them), as plain values.
    func setup(_ options: ClientOptions? = nil) -> ClientSetup {
        ClientSetup(
            server: server, certificate: cert, sideChannelPort: sideChannelPort, analyzerPort: analyzerPort,
            rules: options?.rules, areaThreshold: options?.areaThreshold, pValueThreshold: options?.pValueThreshold,
            noConfirmation: options?.noConfirmation ?? false,
            fleet: FleetOptions(
                mlab: mlab, locateURL: locateURL, locateCA: locateCA, site: site, resolve: resolve,
                locateTokenFile: locateTokenFile),
            network: options?.network.setup ?? NetworkSetup())
    }
}

/// The fleet options of `ServerOptions`, as plain values.
struct FleetOptions: Sendable {
    var mlab = false
    var locateURL: String?
    var locateCA: String?
    var site: String?
    var resolve: [String] = []
    var locateTokenFile: String?
}
