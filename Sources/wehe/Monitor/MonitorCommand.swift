import ArgumentParser
import Foundation
import WeheClient
import WeheWire

/// `wehe monitor`: scheduled tests at random times under a monthly data allowance, with guards, and notices when a
/// verdict changes.
struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Scheduled tests at random times, under a monthly data allowance, with change notices.",
        discussion: """
            `wehe monitor --once` makes one scheduled run now; `wehe monitor run` runs in the foreground (containers, \
            other init systems), at random times (3 a day on average, never more than 4); `wehe monitor install` \
            writes a systemd user timer that runs `wehe monitor --once` at random times, at most 4 a day. \
            A run is skipped on a metered connection (unless --allow-metered), on a battery below 20 % that is not \
            charging, and in quiet hours; it runs only the tests whose largest estimate fits what is left of the \
            allowance (exit 35 when none fits, nothing sent). A verdict that changes on the same provider is said \
            in the journal, as a desktop notification, and to --on-change. Results carry "scheduled": true. \
            Every option can be set once with `wehe settings set` (allowance, per-run, quiet-hours, allow-metered, \
            monitor-tests, on-change). See Docs/monitor.md. \(CLIError.Code.pointer)
            """,
        subcommands: [MonitorRun.self, MonitorInstall.self, MonitorStatus.self, MonitorUninstall.self])

    @Flag(name: .long, help: "Make one scheduled run now, under the same allowance and guards, then exit.")
    var once = false

    @OptionGroup var monitor: MonitorOptions

    func run() async throws {
        guard once else {
            throw ValidationError("say `wehe monitor --once`, or one of: run, install, status, uninstall")
        }
        do {
            try await MonitorRunner(monitor).once()
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}

/// `wehe monitor run`: the foreground loop.
struct MonitorRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run scheduled tests in the foreground at random times until stopped (for containers).")

    @OptionGroup var monitor: MonitorOptions

    func run() async throws {
        do {
            let runner = try MonitorRunner(monitor)
            var random = SystemRandomNumberGenerator()
            while true {
                let now = Date()
                let next = try runner.directory.updateMonitorLedger { ledger -> Date in
                    if let planned = ledger.nextRun, planned > now { return planned }
                    let made = ledger.runs.filter { !$0.outcomes.isEmpty }.map(\.startedAt)
                    let next = runner.schedule.next(
                        after: now, previous: made, calendar: runner.calendar, random: &random)
                    ledger.nextRun = next
                    return next
                }
                runner.say("wehe monitor: next run at \(ISO8601DateFormatter().string(from: next))")
                // Waits in steps of at most a minute, so that a suspended machine runs soon after it wakes.
                while Date() < next {
                    try await Task.sleep(for: .seconds(min(60, max(0.1, next.timeIntervalSinceNow))))
                }
                try runner.directory.updateMonitorLedger { $0.nextRun = nil }
                do {
                    try await runner.once()
                } catch let error as CLIError {
                    // A refused or failed run is said and the loop goes on; the next one may fit or succeed.
                    runner.say(error.message)
                }
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}

/// `wehe monitor status [--json]`.
struct MonitorStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the next run, the allowance used and left with its renewal date, the last runs, the guards.")

    @OptionGroup var monitor: MonitorOptions

    func run() async throws {
        do {
            let runner = try MonitorRunner(monitor)
            let now = Date()
            var ledger = try runner.directory.loadMonitorLedger()
            ledger.roll(to: now, allowance: runner.allowance, calendar: runner.calendar)
            let report = runner.guardReport(now: now)
            let units = MonitorUnits.locate()
            let installed = FileManager.default.fileExists(atPath: units.timerPath)
            let timerNext = installed ? units.nextElapse() : nil
            let next = ledger.nextRun.flatMap { $0 > now ? $0 : nil } ?? timerNext
            let renewal = runner.allowance.renewal(after: now, calendar: runner.calendar)
            let iso = ISO8601DateFormatter()
            func number(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
            if monitor.options.json {
                let runs: [JSONValue] = ledger.runs.suffix(10).map { run in
                    .object([
                        ("startedAt", .string(iso.string(from: run.startedAt))),
                        ("bytes", number(run.bytes)),
                        (
                            "tests",
                            .array(
                                run.outcomes.map { outcome in
                                    .object([
                                        ("test", .string(outcome.test)), ("verdict", .string(outcome.verdict)),
                                        ("provider", .string(outcome.provider)),
                                        ("historyCount", number(outcome.historyCount)),
                                        ("bytes", number(outcome.bytes)),
                                        ("change", outcome.change.map(JSONValue.string) ?? .null),
                                    ])
                                })
                        ),
                        ("note", run.note.map(JSONValue.string) ?? .null),
                    ])
                }
                let guards: [(String, JSONValue)] =
                    report.states.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) } + [
                        ("mayRunNow", .bool(report.mayRun)),
                        ("blocked", .array(report.blocked.map(JSONValue.string))),
                    ]
                let object = JSONValue.object([
                    ("nextRun", next.map { .string(iso.string(from: $0)) } ?? .null),
                    ("timerInstalled", .bool(installed)),
                    (
                        "allowance",
                        .object([
                            ("monthlyBytes", number(runner.allowance.monthlyBytes)),
                            ("perRunBytes", number(runner.allowance.perRunBytes)),
                            ("usedBytes", number(ledger.usedBytes)),
                            ("leftBytes", number(runner.allowance.left(used: ledger.usedBytes))),
                            ("renewsAt", .string(iso.string(from: renewal))),
                        ])
                    ),
                    ("lastRuns", .array(runs)),
                    ("guards", .object(guards)),
                ])
                print(object.serialized())
                return
            }
            print(
                "next run:   " + (next.map { iso.string(from: $0) } ?? "none planned")
                    + (installed ? " (systemd timer installed)" : " (no timer installed)"))
            print(
                "allowance:  \(ByteSize.text(ledger.usedBytes)) used of \(ByteSize.text(runner.allowance.monthlyBytes)), "
                    + "\(ByteSize.text(runner.allowance.left(used: ledger.usedBytes))) left; renews "
                    + iso.string(from: renewal) + "; at most \(ByteSize.text(runner.allowance.perRunBytes)) a run")
            for key in report.states.keys.sorted() { print("\(key): \(report.states[key] ?? "")") }
            print(report.mayRun ? "a run may start now" : "no run now: " + report.blocked.joined(separator: "; "))
            for run in ledger.runs.suffix(10) {
                let tests = run.outcomes.map { "\($0.test) \($0.verdict)" + ($0.change.map { " (\($0))" } ?? "") }
                print(
                    "  \(iso.string(from: run.startedAt))  \(ByteSize.text(run.bytes))  "
                        + (tests.isEmpty ? (run.note ?? "") : tests.joined(separator: ", ")))
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
