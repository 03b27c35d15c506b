import ArgumentParser

/// `wehe settings set <key> <value>`.
struct SetSetting: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Change one setting.")

    @Argument(help: "One of: \(WeheSettings.keys.joined(separator: ", ")).") var key: String
    @Argument(help: "The new value ('default' resets thresholds).") var value: String
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            var settings = try directory.loadSettings()
            _ = Strings.select(language ?? settings.language)
            try settings.set(key, value)
            try directory.save(settings)
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
