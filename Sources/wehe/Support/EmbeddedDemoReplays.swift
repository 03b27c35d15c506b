import Foundation

/// The small synthetic traces compiled into `wehe` (its `DemoReplays` folder, embedded by the build), so that the
/// demo runs even where no trace is installed.
enum EmbeddedDemoReplays {
    /// Writes the traces once to `$XDG_CACHE_HOME/wehe/demo-replays` (default `~/.cache/...`), rewriting a file only
    /// when its bytes differ, and returns the directory; nil when it cannot be written.
    static func directory() -> String? {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (home + "/.cache")
        let directory = base + "/wehe/demo-replays"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (name, bytes) in EmbeddedResources.files where !name.contains("/") {
                let path = directory + "/" + name
                if FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) == bytes { continue }
                try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            }
            return directory
        } catch {
            return nil
        }
    }
}
