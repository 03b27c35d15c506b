import ArgumentParser
import Foundation
import WeheClient

/// What `wehe monitor` takes: `wehe run`'s server, certificate, replay and data-directory options, and the monitor's
/// allowance, guards, tests and change command (each also settable once with `wehe settings set`).
struct MonitorOptions: ParsableArguments {
    @OptionGroup var connection: ServerOptions
    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Monthly data allowance of scheduled tests: kB, MB or GB, decimal (default: settings, else 1GB).",
            valueName: "size"))
    var allowance: String?

    @Option(
        name: .customLong("per-run"),
        help: ArgumentHelp("Data one run may plan at most (default: settings, else 100MB).", valueName: "size"))
    var perRun: String?

    @Option(
        name: .customLong("quiet-hours"),
        help: ArgumentHelp(
            "Hours with no run, local time, start-end (e.g. 23-7; default: settings, else none).", valueName: "hours"))
    var quietHours: String?

    @Flag(name: .customLong("allow-metered"), help: "Also run on a connection NetworkManager marks as metered.")
    var allowMetered = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Tests to monitor, comma-separated (default: settings, else a cheap set: no video, no large port test).",
            valueName: "ids"))
    var tests: String?

    @Option(
        name: .customLong("on-change"),
        help: ArgumentHelp(
            "Shell command run when a monitored verdict changes, given the result's JSON on standard input "
                + "(30 s limit; its failure is logged and the monitor goes on).",
            valueName: "command"))
    var onChange: String?

    @Option(
        name: .customLong("runs-per-day"),
        help: "Mean runs a day at random times for `monitor run` (default 3; never more than 4 a day).")
    var runsPerDay: Double = 3

    @Flag(name: .long, help: "The published Wehe test instead of the adaptive verdict.")
    var published = false

    /// The power-supply tree the battery guard reads (a directory of fakes in tests).
    @Option(name: .customLong("power-supply"), help: .hidden)
    var powerSupplyRoot = "/sys/class/power_supply"

    func validate() throws {
        if !(runsPerDay > 0 && runsPerDay <= 4) {
            throw ValidationError("--runs-per-day must be above 0 and at most 4")
        }
        if let allowance { _ = try Self.size(allowance, "--allowance") }
        if let perRun { _ = try Self.size(perRun, "--per-run") }
        if let quietHours {
            do { _ = try QuietHours.parse(quietHours) } catch { throw ValidationError("--quiet-hours: \(error)") }
        }
    }

    static func size(_ text: String, _ name: String) throws -> Int {
        do { return try ByteSize.parse(text) } catch { throw ValidationError("\(name): \(error)") }
    }

    /// The arguments that give these options to `wehe monitor --once` (in a systemd unit): paths made absolute.
    var forwarded: [String] {
        func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
        var arguments: [String] = []
        func add(_ name: String, _ value: String?) { if let value { arguments += [name, value] } }
        add("--data-dir", absolute(DataDirectory.resolve(options.dataDirectory).path))
        add("--server", connection.server)
        add("--cert", connection.cert.map(absolute))
        if connection.sideChannelPort != 55556 { add("--side-channel-port", String(connection.sideChannelPort)) }
        if connection.analyzerPort != 56566 { add("--analyzer-port", String(connection.analyzerPort)) }
        add("--replays", replays.directory.map(absolute))
        add("--lang", options.language)
        add("--allowance", allowance)
        add("--per-run", perRun)
        add("--quiet-hours", quietHours)
        if allowMetered { arguments.append("--allow-metered") }
        add("--tests", tests)
        add("--on-change", onChange)
        if published { arguments.append("--published") }
        if options.noConfirmation { arguments.append("--no-confirmation") }
        return arguments
    }
}
