import Foundation

/// Where `wehe` keeps its files and how it reads and writes the settings.
struct DataDirectory {
    let path: String

    /// `--data-dir`, else `$WEHE_DATA_DIR`, else `$XDG_DATA_HOME/wehe`, else `~/.local/share/wehe`.
    static func resolve(_ explicit: String?) -> DataDirectory {
        let environment = ProcessInfo.processInfo.environment
        if let explicit, !explicit.isEmpty { return DataDirectory(path: explicit) }
        if let value = environment["WEHE_DATA_DIR"], !value.isEmpty { return DataDirectory(path: value) }
        if let value = environment["XDG_DATA_HOME"], !value.isEmpty { return DataDirectory(path: value + "/wehe") }
        return DataDirectory(path: (environment["HOME"] ?? ".") + "/.local/share/wehe")
    }

    var settingsPath: String { path + "/settings.json" }
    var historyPath: String { path + "/history.sqlite" }

    /// Reads the settings; a missing file gives the defaults (with a new user id).
    func loadSettings() throws -> WeheSettings {
        guard FileManager.default.fileExists(atPath: settingsPath) else { return WeheSettings() }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: settingsPath))
            return try JSONDecoder().decode(WeheSettings.self, from: data)
        } catch {
            throw CLIError(
                code: .invalidInput, "the settings file \(settingsPath) is unreadable: \(error.localizedDescription)")
        }
    }

    /// Writes the settings atomically.
    func save(_ settings: WeheSettings) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(settings).write(to: URL(fileURLWithPath: settingsPath), options: .atomic)
        } catch {
            throw CLIError(code: .storeFailed, "cannot write \(settingsPath): \(error.localizedDescription)")
        }
    }
}
