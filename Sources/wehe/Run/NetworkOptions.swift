import ArgumentParser
import WeheWire

/// The options naming the provider of a test: the client's own IP-to-AS table and a name override. Shared by
/// `wehe run` and the commands that run tests like it.
struct NetworkOptions: ParsableArguments {
    @Option(
        name: .customLong("asn-prefixes"),
        help: ArgumentHelp(
            "Own IP-to-AS table (RouteViews prefix-to-AS file), used when the server answers no AS.",
            valueName: "file"))
    var asnPrefixes: String?

    @Option(
        name: .customLong("asn-names"),
        help: ArgumentHelp("AS names for --asn-prefixes (asn<TAB>name).", valueName: "file"))
    var asnNames: String?

    @Option(name: .long, help: "Provider name to show and record instead of the AS name (e.g. \"Free (fibre)\").")
    var provider: String?

    /// These options as plain values.
    var setup: NetworkSetup { NetworkSetup(asnPrefixes: asnPrefixes, asnNames: asnNames, provider: provider) }
}

/// The provider options over the settings, as plain values.
struct NetworkSetup: Sendable {
    var asnPrefixes: String?
    var asnNames: String?
    var provider: String?

    /// The table named by the options, else the settings; `nil` when none is named.
    /// - Throws: `CLIError` for an unreadable or oversized file (bad lines are skipped and counted, not fatal).
    func table(settings: WeheSettings) throws -> ASTable? {
        guard let prefixes = asnPrefixes ?? settings.asnPrefixes else {
            if asnNames != nil {
                throw CLIError(code: .invalidInput, "--asn-names needs --asn-prefixes (the names alone match nothing)")
            }
            return nil
        }
        do {
            return try ASTable.load(prefixFile: prefixes, namesFile: asnNames ?? settings.asnNames)
        } catch {
            throw CLIError(code: .missingInput, "cannot read the IP-to-AS table: \(error)")
        }
    }

    /// The provider name: the option, else the setting.
    func providerName(settings: WeheSettings) -> String? {
        (provider ?? settings.provider).flatMap { $0.isEmpty ? nil : $0 }
    }
}
