import ArgumentParser
import WeheCore
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `--replays <dir>`, shared by every command that reads traces.
struct ReplayDirectoryOption: ParsableArguments {
    @Option(
        name: .customLong("replays"),
        help: ArgumentHelp(
            "Directory of replay traces and their catalog.",
            discussion:
                "Default: $WEHE_REPLAYS, else ~/.local/share/wehe/replays, else ./replays, else ../shared/replays, "
                + "else the installed traces (/usr/share/wehe/replays, or share/wehe/replays beside bin/). "
                + "Without --replays, your recordings ($WEHE_RECORDINGS, else ~/.local/share/wehe/recordings) join them."
        )
    )
    var directory: String?

    /// The library of traces a command uses: the resolved directory and, unless `--replays` named one, the user's
    /// recordings (`recordingsDirectory`), so that a test made with `wehe record` runs beside the installed catalog.
    func library() throws -> ReplayLibrary {
        let directory = try resolved()
        guard self.directory == nil, let recordings = Self.recordingsDirectory() else {
            return ReplayLibrary(directory: directory)
        }
        return ReplayLibrary(directory: directory, additionalDirectories: [recordings])
    }

    /// Where `wehe record` writes by default and where every command finds the user's recorded tests:
    /// `$WEHE_RECORDINGS`, else `~/.local/share/wehe/recordings`.
    static func recordingsDirectory() -> String? {
        if let fromEnvironment = getenv("WEHE_RECORDINGS").map({ String(cString: $0) }), !fromEnvironment.isEmpty {
            return fromEnvironment
        }
        return getenv("HOME").map { String(cString: $0) + "/.local/share/wehe/recordings" }
    }

    /// The directory to use, by the documented order of preference.
    func resolved() throws -> String {
        if let directory { return directory }
        let candidates = Self.candidates()
        if let found = candidates.first(where: { ReplayLibrary.isDirectory($0) }) { return found }
        throw CLIError(
            code: .missingInput,
            "no replay directory found (tried \(candidates.joined(separator: ", "))); pass --replays <dir>"
        )
    }

    /// Where traces are looked for without `--replays`: `$WEHE_REPLAYS` alone when set; else the user's own
    /// (`~/.local/share/wehe/replays`), `./replays`, a checkout's `../shared/replays`, then an installation's
    /// (`InstalledData.replayDirectories`).
    static func candidates() -> [String] {
        if let fromEnvironment = getenv("WEHE_REPLAYS").map({ String(cString: $0) }), !fromEnvironment.isEmpty {
            return [fromEnvironment]
        }
        var candidates: [String] = []
        if let home = getenv("HOME").map({ String(cString: $0) }) {
            candidates.append(home + "/.local/share/wehe/replays")
        }
        candidates += ["replays", "../shared/replays"]
        return candidates + InstalledData.replayDirectories
    }
}
