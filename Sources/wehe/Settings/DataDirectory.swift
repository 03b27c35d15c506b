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
                code: .invalidInput, "the settings file \(settingsPath) is unreadable: \(FileErrors.describe(error))")
        }
    }

    /// Creates the directory when missing; when it cannot be, says why in plain words: which part of the path is
    /// "not a directory", or "permission denied" (Foundation only says "error 512").
    /// - Throws: `CLIError` `.storeFailed` naming the path and the cause.
    func create() throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CLIError(code: .storeFailed, "cannot use the data directory \(path): not a directory")
            }
            guard FileManager.default.isWritableFile(atPath: path) else {
                throw CLIError(code: .storeFailed, "cannot write the data directory \(path): permission denied")
            }
            return
        }
        // The nearest existing ancestor tells why the directory cannot be made.
        var ancestor = (path as NSString).deletingLastPathComponent
        while !ancestor.isEmpty, ancestor != "/", !FileManager.default.fileExists(atPath: ancestor) {
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        if !ancestor.isEmpty, FileManager.default.fileExists(atPath: ancestor, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CLIError(
                    code: .storeFailed, "cannot create the data directory \(path): \(ancestor) is not a directory")
            }
            guard FileManager.default.isWritableFile(atPath: ancestor) else {
                throw CLIError(
                    code: .storeFailed, "cannot create the data directory \(path): permission denied in \(ancestor)")
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CLIError(
                code: .storeFailed, "cannot create the data directory \(path): \(FileErrors.describe(error))")
        }
    }

    /// Writes the settings atomically.
    func save(_ settings: WeheSettings) throws {
        try create()
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(settings).write(to: URL(fileURLWithPath: settingsPath), options: .atomic)
        } catch {
            throw CLIError(code: .storeFailed, "cannot write \(settingsPath): \(FileErrors.describe(error))")
        }
    }
}
