import Foundation

/// Where an installation keeps its read-only data (the published replay traces and the Wehe fleet CA), so that an
/// installed or unpacked `wehe` finds them with no flag and no environment variable.
///
/// The Debian package installs `/usr/bin/wehe` and `/usr/share/wehe/`; the tarball unpacks `bin/wehe` beside
/// `share/wehe/`. Both are `<directory of the executable>/../share/wehe`, which comes first; the system locations
/// follow for a binary copied elsewhere.
package enum InstalledData {
    /// The candidate data directories, most specific first.
    package static var directories: [String] {
        var result: [String] = []
        if let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            let share = executable.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("share/wehe").standardizedFileURL.path
            result.append(share)
        }
        for system in ["/usr/local/share/wehe", "/usr/share/wehe"] where !result.contains(system) {
            result.append(system)
        }
        return result
    }

    /// The installed replay directories (`<data>/replays`).
    package static var replayDirectories: [String] { directories.map { $0 + "/replays" } }

    /// The installed Wehe CA files (`<data>/wehe-ca.pem`).
    package static var certificateFiles: [String] { directories.map { $0 + "/wehe-ca.pem" } }
}
