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
            _ = Strings.select(try language ?? directory.loadSettings().language)
            // Only this key is written; a key another command changes meanwhile keeps its new value.
            try directory.update { try $0.set(key, value) }
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
