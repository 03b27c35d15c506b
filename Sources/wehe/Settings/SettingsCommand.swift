import ArgumentParser

/// `wehe settings` (or `wehe settings show`) shows the settings; `wehe settings set <key> <value>` changes one.
///
/// The parent carries no options of its own: an option declared on both a parent and its subcommand is taken by
/// the parent, so each subcommand owns its `--data-dir`.
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings", abstract: "Show or change the settings.",
        subcommands: [ShowSettings.self, SetSetting.self], defaultSubcommand: ShowSettings.self)
}

/// `wehe settings show`.
struct ShowSettings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show the settings.")

    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            try directory.save(settings)
            func show(_ value: Double?) -> String { value.map { "\($0)" } ?? "default" }
            print(
                Terminal.table(
                    header: ["SETTING", "VALUE"],
                    rows: [
                        ["server", settings.server], ["certificate", settings.certificate ?? "(system roots)"],
                        ["user-id", settings.userID], ["area-threshold", show(settings.areaThreshold)],
                        ["p-threshold", show(settings.ksPValueThreshold)], ["rules", settings.ruleSet],
                        ["confirmation", settings.confirmation ? "on" : "off"],
                        ["language", settings.language ?? "auto"],
                        ["consent", settings.consentAccepted ? "accepted" : "not given"],
                        ["data-directory", directory.path], ["tests-run", String(settings.lastHistoryCount)],
                    ]))
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}

/// `wehe settings set <key> <value>`.
struct SetSetting: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Change one setting.")

    @Argument(help: "One of: \(WeheSettings.keys.joined(separator: ", ")).") var key: String
    @Argument(help: "The new value ('default' resets thresholds).") var value: String
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            var settings = try directory.loadSettings()
            try settings.set(key, value)
            try directory.save(settings)
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
