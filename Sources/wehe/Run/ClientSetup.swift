import WeheClient

/// How the client runs a test, from the command-line options over the settings: the one place that builds the
/// `ReplayClientConfiguration` for `wehe run` and for tests started from `wehe dashboard`.
struct ClientSetup: Sendable {
    /// `--server`, overriding the settings.
    var server: String?
    /// `--cert`, overriding the settings.
    var certificate: String?
    /// Side-channel port.
    var sideChannelPort: Int
    /// Analyzer port.
    var analyzerPort: Int
    /// `--rules`.
    var rules: String?
    /// `--area-threshold`.
    var areaThreshold: Double?
    /// `--p-threshold`.
    var pValueThreshold: Double?
    /// `--no-confirmation`.
    var noConfirmation: Bool

    /// The client configuration for a test with `settings` (history counts come from, and are saved to, the
    /// settings file of `directory`). The caller sets the result store.
    /// - Throws: `CLIError` for an unreadable certificate or invalid thresholds.
    func configuration(settings: WeheSettings, directory: DataDirectory) throws -> ReplayClientConfiguration {
        ReplayClientConfiguration(
            server: server ?? settings.server, userID: settings.userID,
            trustedCertificatesPEM: try RunCommand.readCertificate(certificate ?? settings.certificate),
            sideChannelPort: sideChannelPort, analyzerPort: analyzerPort,
            verdictRules: try TestSelection.verdictRules(
                rules: rules ?? settings.ruleSet, area: areaThreshold ?? settings.areaThreshold,
                pValue: pValueThreshold ?? settings.ksPValueThreshold),
            confirmation: settings.confirmation && !noConfirmation,
            historyCounter: SettingsHistoryCounter(directory: directory, settings: settings))
    }
}
