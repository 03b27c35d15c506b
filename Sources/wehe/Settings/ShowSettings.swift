import ArgumentParser
import WeheClient

/// `wehe settings show`.
struct ShowSettings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show the settings.")

    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.settingsRecordingUserID()
            let strings = Strings.select(language ?? settings.language)
            func show(_ value: Double?) -> String { value.map { "\($0)" } ?? "default" }
            print(
                Terminal.table(
                    header: strings.language == .fr ? ["RÉGLAGE", "VALEUR"] : ["SETTING", "VALUE"],
                    rows: [
                        ["server", settings.server],
                        ["cert", settings.certificate ?? "(the Wehe CA for the fleet, else system roots)"],
                        ["locate-url", settings.locateURL ?? FleetConfiguration.defaultLocateURL],
                        ["locate-ca", settings.locateCA ?? "(system roots)"], ["site", settings.site ?? "nearest"],
                        ["user-id", settings.userID], ["area-threshold", show(settings.areaThreshold)],
                        ["p-threshold", show(settings.ksPValueThreshold)], ["rules", settings.ruleSet],
                        ["confirmation", settings.confirmation ? "on" : "off"],
                        ["language", settings.language ?? "auto"],
                        [
                            "consent",
                            settings.consentAccepted
                                ? (strings.language == .fr ? "donné" : "accepted")
                                : (strings.language == .fr ? "non donné" : "not given"),
                        ],
                        ["asn-prefixes", settings.asnPrefixes ?? "(none: the server's answer only)"],
                        ["asn-names", settings.asnNames ?? "(none)"],
                        ["provider", settings.provider ?? "(the AS name)"],
                        ["allowance", settings.monitorAllowance.map(ByteSize.text) ?? "1 GB (default)"],
                        ["per-run", settings.monitorPerRun.map(ByteSize.text) ?? "100 MB (default)"],
                        ["quiet-hours", settings.monitorQuietHours ?? "none"],
                        ["allow-metered", settings.monitorAllowMetered == true ? "on" : "off"],
                        ["monitor-tests", settings.monitorTests?.joined(separator: ",") ?? "(the cheap default set)"],
                        ["on-change", settings.monitorOnChange ?? "(none)"],
                        ["data-directory", directory.path], ["tests-run", String(settings.lastHistoryCount)],
                    ]))
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
