import ArgumentParser

/// Options shared by `wehe run` and `wehe demo`: where things are, language, consent, thresholds, output.
struct ClientOptions: ParsableArguments {
    @Option(
        name: .customLong("data-dir"), help: "Where settings and the result history live (default ~/.local/share/wehe)."
    )
    var dataDirectory: String?

    @Option(name: .customLong("lang"), help: "Language of messages: en or fr (default: settings, then the locale).")
    var language: String?

    @Flag(name: .customLong("accept-consent"), help: "Accept the consent text without asking (and remember it).")
    var acceptConsent = false

    @Flag(
        name: .shortAndLong,
        help: "Start without asking when the tests move more than 200 MB or take more than 5 minutes.")
    var yes = false

    @Option(
        name: .customLong("area-threshold"), help: "Area threshold as a fraction (default 0.5, 0.3 above 10 Mbit/s).")
    var areaThreshold: Double?

    @Option(name: .customLong("p-threshold"), help: "KS p-value threshold (default 0.01).")
    var pValueThreshold: Double?

    @Option(
        name: .customLong("rules"), help: "Decision rule: android (default) or ios (also needs the jackknife ratio).")
    var rules: String?

    @Flag(name: .customLong("no-confirmation"), help: "Do not re-run a test whose first result is not clear.")
    var noConfirmation = false

    @Flag(name: .long, help: "Print one JSON object per test on stdout (progress goes to stderr).")
    var json = false

    @OptionGroup(title: "Provider (the network a result names)") var network: NetworkOptions
}
