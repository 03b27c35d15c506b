import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The systemd user units of the monitor: `wehe-monitor.service` runs `wehe monitor --once`, `wehe-monitor.timer`
/// starts it four times a day, each at a random moment of its six hours (`RandomizedDelaySec`), so at most 4 runs a
/// day at random times; the run itself checks the guards, the daily cap and the allowance.
struct MonitorUnits {
    /// `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
    let directory: String
    static let serviceName = "wehe-monitor.service"
    static let timerName = "wehe-monitor.timer"

    var servicePath: String { directory + "/" + Self.serviceName }
    var timerPath: String { directory + "/" + Self.timerName }

    static func locate(_ explicit: String? = nil) -> MonitorUnits {
        if let explicit, !explicit.isEmpty { return MonitorUnits(directory: explicit) }
        let environment = ProcessInfo.processInfo.environment
        let config =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? ".") + "/.config"
        return MonitorUnits(directory: config + "/systemd/user")
    }

    /// One argument of `ExecStart=`, quoted for systemd: in double quotes, `\` and `"` escaped, `%` and `$` doubled
    /// (systemd's specifiers and variables).
    static func quote(_ argument: String) -> String {
        var text = ""
        for character in argument {
            switch character {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "%": text += "%%"
            case "$": text += "$$"
            case "\n": text += "\\n"
            default: text.append(character)
            }
        }
        return "\"" + text + "\""
    }

    /// The service unit running `executable monitor --once arguments`.
    static func service(executable: String, arguments: [String]) -> String {
        let command = ([executable, "monitor", "--once"] + arguments).map(quote).joined(separator: " ")
        return """
            [Unit]
            Description=Wehe: one scheduled differentiation test run (wehe monitor --once)

            [Service]
            Type=oneshot
            ExecStart=\(command)
            # A run refused for the allowance exits 35; it is said in the journal and is not a failure of the unit.
            SuccessExitStatus=35
            Nice=10

            """
    }

    /// The timer: four windows a day, a random moment in each.
    static let timer = """
        [Unit]
        Description=Wehe: scheduled tests at random times, at most 4 a day

        [Timer]
        OnCalendar=*-*-* 00,06,12,18:00:00
        RandomizedDelaySec=6h
        AccuracySec=1min
        Persistent=false

        [Install]
        WantedBy=timers.target

        """

    /// This program's absolute path (`/proc/self/exe`, else the first argument made absolute).
    static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 { return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
    }

    /// Whether a user systemd answers (`systemctl --user show-environment`).
    static func userSystemd() -> String? {
        guard let systemctl = ChildCommand.which("systemctl"),
            let outcome = try? ChildCommand.run(systemctl, ["--user", "show-environment"], timeout: 5),
            outcome.status == 0
        else { return nil }
        return systemctl
    }

    /// The timer's next elapse as systemd says it, when a user systemd answers.
    func nextElapse() -> Date? {
        guard let systemctl = Self.userSystemd(),
            let outcome = try? ChildCommand.run(
                systemctl, ["--user", "show", Self.timerName, "-p", "NextElapseUSecRealtime", "--value"], timeout: 5),
            outcome.status == 0
        else { return nil }
        let text = outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE yyyy-MM-dd HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}

/// `wehe monitor install`.
struct MonitorInstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Write a systemd user timer and service that run `wehe monitor --once` at random times.",
        discussion: """
            The units go to ~/.config/systemd/user ($XDG_CONFIG_HOME/systemd/user); the service is given the \
            options of this command. With a user systemd running, the timer is enabled and started unless \
            --no-enable; otherwise the files are written and the command to enable them is printed.
            """)

    @Flag(name: .customLong("no-enable"), help: "Write the units without enabling the timer.")
    var noEnable = false

    @Option(
        name: .customLong("unit-directory"),
        help: "Where to write the units (default ~/.config/systemd/user); not enabled when given.")
    var unitDirectory: String?

    @OptionGroup var monitor: MonitorOptions

    func run() async throws {
        do {
            let runner = try MonitorRunner(monitor)
            // Nobody answers a consent question in a timer's run: it is given here, or said to be missing.
            if monitor.options.acceptConsent {
                try runner.directory.update { $0.consentAccepted = true }
            } else if !runner.settings.consentAccepted {
                print(
                    "the consent is not given yet: scheduled runs will exit 4 until `wehe settings set consent on` "
                        + "(or install again with --accept-consent)")
            }
            let units = MonitorUnits.locate(unitDirectory)
            do {
                try FileManager.default.createDirectory(atPath: units.directory, withIntermediateDirectories: true)
            } catch {
                throw CLIError(code: .storeFailed, "cannot create \(units.directory): \(error.localizedDescription)")
            }
            let service = MonitorUnits.service(
                executable: MonitorUnits.executablePath(), arguments: monitor.forwarded)
            try DataDirectory.replaceAtomically(units.servicePath, with: Array(service.utf8))
            try DataDirectory.replaceAtomically(units.timerPath, with: Array(MonitorUnits.timer.utf8))
            print("wrote \(units.servicePath)")
            print("wrote \(units.timerPath)")
            let enable = "systemctl --user daemon-reload && systemctl --user enable --now \(MonitorUnits.timerName)"
            guard !noEnable, unitDirectory == nil else {
                print("not enabled; to enable: \(enable)")
                return
            }
            guard let systemctl = MonitorUnits.userSystemd() else {
                print("no user systemd answers here; the units are written. To enable them in a session: \(enable)")
                return
            }
            for arguments in [["--user", "daemon-reload"], ["--user", "enable", "--now", MonitorUnits.timerName]] {
                let outcome = try? ChildCommand.run(systemctl, arguments, timeout: 30)
                guard outcome?.status == 0 else {
                    throw CLIError(
                        code: .storeFailed,
                        "systemctl \(arguments.joined(separator: " ")) failed: "
                            + (outcome?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? "could not start"))
                }
            }
            print("enabled and started \(MonitorUnits.timerName)")
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}

/// `wehe monitor uninstall`.
struct MonitorUninstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        abstract: "Stop and remove the monitor's systemd user timer and service (the ledger and history stay).")

    @Option(name: .customLong("unit-directory"), help: "Where the units were written (default ~/.config/systemd/user).")
    var unitDirectory: String?

    func run() async throws {
        let units = MonitorUnits.locate(unitDirectory)
        if let systemctl = MonitorUnits.userSystemd() {
            _ = try? ChildCommand.run(systemctl, ["--user", "disable", "--now", MonitorUnits.timerName], timeout: 30)
        }
        var removed = false
        for path in [units.timerPath, units.servicePath] where FileManager.default.fileExists(atPath: path) {
            do {
                try FileManager.default.removeItem(atPath: path)
                print("removed \(path)")
                removed = true
            } catch {
                throw CLIError(code: .storeFailed, "cannot remove \(path): \(error.localizedDescription)").exit()
            }
        }
        if let systemctl = MonitorUnits.userSystemd() {
            _ = try? ChildCommand.run(systemctl, ["--user", "daemon-reload"], timeout: 30)
        }
        if !removed { print("no monitor units in \(units.directory)") }
    }
}
