import Foundation
import WeheClient
import WeheCore
import WeheStore
import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One scheduled run (`wehe monitor --once`, and each run of `wehe monitor run`): the guards, the daily cap, the
/// allowance, then the tests that fit, each result kept in the history and counted in the ledger as soon as it ends.
struct MonitorRunner {
    let monitor: MonitorOptions
    let directory: DataDirectory
    let settings: WeheSettings
    let strings: Strings
    let allowance: DataAllowance
    let guards: MonitorGuards
    let schedule: MonitorSchedule
    let onChange: String?
    var calendar = Calendar.current

    /// The options over the settings.
    init(_ monitor: MonitorOptions) throws {
        self.monitor = monitor
        directory = DataDirectory.resolve(monitor.options.dataDirectory)
        settings = try directory.loadSettings()
        strings = Strings.select(monitor.options.language ?? settings.language)
        let monthly = try monitor.allowance.map { try MonitorOptions.size($0, "--allowance") }
        let perRun = try monitor.perRun.map { try MonitorOptions.size($0, "--per-run") }
        allowance = DataAllowance(
            monthlyBytes: monthly ?? settings.monitorAllowance ?? DataAllowance.defaultMonthlyBytes,
            perRunBytes: perRun ?? settings.monitorPerRun ?? DataAllowance.defaultPerRunBytes)
        let quiet: QuietHours?
        do {
            quiet = try (monitor.quietHours ?? settings.monitorQuietHours).flatMap { try QuietHours.parse($0) }
        } catch {
            throw CLIError(code: .invalidInput, "quiet hours: \(error)")
        }
        guards = MonitorGuards(
            allowMetered: monitor.allowMetered || settings.monitorAllowMetered == true, quietHours: quiet)
        schedule = MonitorSchedule(runsPerDay: monitor.runsPerDay, maximumPerDay: 4, quietHours: quiet)
        onChange = monitor.onChange ?? settings.monitorOnChange
    }

    /// Says one line where journald takes it (stdout; stderr when stdout carries JSON).
    func say(_ line: String) {
        if monitor.options.json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    /// The guards' readings now.
    func guardReport(now: Date) -> MonitorGuards.Report {
        guards.check(
            now: now, calendar: calendar, metered: Self.meteredState(),
            batteries: BatteryState.read(root: monitor.powerSupplyRoot))
    }

    /// NetworkManager's answer; unknown (counted as not metered) when `nmcli` is absent or fails.
    static func meteredState() -> MeteredState {
        guard let nmcli = ChildCommand.which("nmcli") else { return .unknown("NetworkManager's nmcli not found") }
        do {
            let outcome = try ChildCommand.run(
                nmcli, ["-t", "-f", "GENERAL.DEVICE,GENERAL.STATE,GENERAL.METERED", "device", "show"], timeout: 5)
            guard outcome.status == 0 else { return .unknown("nmcli failed (NetworkManager not running?)") }
            return MeteredState.parseNetworkManager(outcome.output)
        } catch {
            return .unknown("nmcli could not be started")
        }
    }

    /// The tests to monitor: `--tests`, else the setting, else the cheap default set: the three cheapest tests of
    /// the catalog whose traces are present, video and large port tests left out.
    func testIDs(library: ReplayLibrary, catalog: AppCatalog) -> [String] {
        if let tests = monitor.tests {
            return tests.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        if let tests = settings.monitorTests, !tests.isEmpty { return tests }
        let cheap = catalog.entries.filter {
            !$0.hidden && $0.category != .video && !$0.isLargePortTest && TestSelection.available($0, library, catalog)
        }
        let loaded = cheap.compactMap { entry in
            (try? TestSelection.load([entry.id], from: library, catalog: catalog).first).map {
                (id: entry.id, bytes: TestCost.of($0, mode: mode).mostBytes)
            }
        }
        return Array(loaded.sorted { $0.bytes < $1.bytes }.prefix(3).map(\.id))
    }

    var adaptive: Bool { !monitor.published }
    var mode: TestCost.Mode {
        adaptive
            ? .adaptive
            : .published(confirmation: settings.confirmation && !monitor.options.noConfirmation)
    }

    /// One scheduled run now. A guard or the daily cap skips it (said, exit 0: nothing is wrong); an allowance too
    /// small for any test refuses it with `CLIError` `.allowanceExhausted`, before anything is sent.
    func once(now: Date = Date()) async throws {
        let report = guardReport(now: now)
        guard report.mayRun else {
            say("wehe monitor: no run now: " + report.blocked.joined(separator: "; "))
            return
        }
        let ledger = try directory.loadMonitorLedger()
        let made = ledger.runs.filter { !$0.outcomes.isEmpty }.map(\.startedAt)
        guard schedule.allows(now, previous: made, calendar: calendar) else {
            say("wehe monitor: no run now: \(schedule.maximumPerDay) runs were already made today (the daily cap)")
            return
        }
        let replayDirectory = try monitor.replays.resolved()
        let library = ReplayLibrary(directory: replayDirectory)
        let catalog = try TestSelection.catalog(library)
        let selected = try TestSelection.load(
            testIDs(library: library, catalog: catalog), from: library, catalog: catalog)
        let costs = selected.map { (id: $0.entry.id, cost: TestCost.of($0, mode: mode)) }
        let used = try directory.updateMonitorLedger { ledger -> Int in
            ledger.roll(to: now, allowance: allowance, calendar: calendar)
            return ledger.usedBytes
        }
        let plan = allowance.plan(costs, used: used)
        guard !plan.tests.isEmpty else {
            let message = refusal(plan, now: now)
            try directory.updateMonitorLedger { ledger in
                ledger.record(MonitorRunRecord(startedAt: now, bytes: 0, outcomes: [], note: message))
            }
            throw CLIError(code: .allowanceExhausted, message)
        }
        if !plan.skipped.isEmpty {
            say(
                "wehe monitor: left out for the allowance: \(plan.skipped.joined(separator: ", ")) "
                    + "(this run may use \(ByteSize.text(plan.budgetBytes)))")
        }
        try directory.ensureUsable(strings)
        var settings = try directory.settingsRecordingUserID()
        guard settings.consentAccepted || monitor.options.acceptConsent else {
            throw CLIError(code: .consentRequired, strings.consentRequired)
        }
        if !settings.consentAccepted {
            settings = try directory.update { $0.consentAccepted = true }
        }
        let lock = try TestLock.acquire(directory, strings: strings)
        defer { withExtendedLifetime(lock) {} }
        let setup = monitor.connection.setup(monitor.options)
        // On the public fleet (no --server), each test runs in an access envelope of its own, as `wehe run`'s.
        let fleet = try setup.fleetPlan(settings: settings, replayDirectory: replayDirectory)
        var configuration = try setup.configuration(settings: settings, directory: directory)
        let tests = selected.filter { plan.tests.contains($0.entry.id) }
        let started = Date()
        let adaptive = adaptive
        try await History.with(directory) { history in
            configuration.store = history
            configuration.scheduled = true
            let route = try FleetStep.route(
                fleet, configuration: configuration, directory: directory, json: monitor.options.json)
            for test in tests {
                let measured: (result: TestResult, server: String)
                do {
                    measured = try await route.within { entered in
                        let client = ReplayClient(configuration: entered.configuration)
                        let result = try await RunCommand.guarded(entered.envelope) { () async throws -> TestResult in
                            adaptive
                                ? try await client.runAdaptive(test) { _ in } : try await client.run(test) { _ in }
                        }
                        return (result, entered.configuration.server)
                    }
                } catch {
                    let failure: CLIError
                    switch error {
                    case let error as ReplayClientError: failure = CLIError(error)
                    case let error as FleetError: failure = CLIError(error)
                    case let error as CLIError: failure = error
                    default: throw error
                    }
                    try directory.updateMonitorLedger { ledger in
                        ledger.record(
                            MonitorRunRecord(
                                startedAt: started, bytes: 0, outcomes: [],
                                note: "\(test.entry.id): \(failure.message)"))
                    }
                    throw failure
                }
                try record(measured.result, server: measured.server, started: started)
            }
        }
    }

    /// Counts a result against the allowance, prints it, and says a change of verdict.
    private func record(_ result: TestResult, server: String, started: Date) throws {
        let bytes = Self.bytesMoved(result)
        let provider = result.network.displayName ?? "unknown provider"
        let json = Self.scheduledJSON(result, server: server)
        let change = try directory.updateMonitorLedger { ledger -> VerdictChange? in
            let previous = ledger.lastVerdict(test: result.test, provider: provider)
            let change = VerdictChange.between(
                previous: previous?.verdict, current: result.verdict.rawValue, test: result.test, provider: provider)
            ledger.roll(to: started, allowance: allowance, calendar: calendar)
            ledger.record(
                MonitorRunRecord(
                    startedAt: started, bytes: bytes,
                    outcomes: [
                        .init(
                            test: result.test, verdict: result.verdict.rawValue, provider: provider,
                            historyCount: result.historyCount, bytes: bytes, change: change?.kind.rawValue)
                    ]))
            return change
        }
        if monitor.options.json {
            FileHandle.standardOutput.write(Data((json + "\n").utf8))
        } else {
            say(strings.verdictLine(result) + " [scheduled, \(ByteSize.text(bytes))]")
        }
        if let change { announce(change, json: json) }
    }

    /// Every byte the test moved both ways: the adaptive rounds' count, else both replays' bytes sent and received
    /// (twice with a confirmation run, which replays the same again).
    static func bytesMoved(_ result: TestResult) -> Int {
        if let moved = result.sensitive?.bytesMoved { return moved }
        let once = [result.original, result.control].compactMap { $0 }.reduce(0) {
            $0 + $1.bytesSent + $1.bytesReceived
        }
        return result.confirmed ? 2 * once : once
    }

    /// The result's JSON (the record `wehe run --json` prints) with `"scheduled": true`.
    static func scheduledJSON(_ result: TestResult, server: String) -> String {
        var record = ResultRecord(run: result, server: server)
        record.scheduled = true
        return record.jsonText
    }

    /// Why no test fits: the allowance spent (and when it renews), or what is left against the cheapest test.
    func refusal(_ plan: AllowancePlan, now: Date) -> String {
        let renewal = allowance.renewal(after: now, calendar: calendar)
        let formatter = DateFormatter()
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd"
        let renews = formatter.string(from: renewal)
        if plan.leftBytes == 0 {
            return "the monitor's data allowance of \(ByteSize.text(allowance.monthlyBytes)) is spent for this "
                + "month; it renews on \(renews). Nothing was sent."
        }
        let cheapest = plan.cheapestSkippedBytes.map { "; the cheapest test may move up to \(ByteSize.text($0))" } ?? ""
        return "no test fits the monitor's data allowance: \(ByteSize.text(plan.leftBytes)) left of "
            + "\(ByteSize.text(allowance.monthlyBytes)) this month (renews on \(renews)), at most "
            + "\(ByteSize.text(allowance.perRunBytes)) a run\(cheapest). Nothing was sent."
    }

    /// Says a change of verdict: a line for the journal, a desktop notification where one can be shown, and the
    /// `--on-change` command with the result's JSON on its standard input. None of them can stop the monitor.
    func announce(_ change: VerdictChange, json: String) {
        say(change.line)
        let environment = ProcessInfo.processInfo.environment
        if let notify = ChildCommand.which("notify-send"),
            environment["DBUS_SESSION_BUS_ADDRESS"].map({ !$0.isEmpty }) == true
        {
            let title = change.kind == .newlyThrottled ? "Wehe: differentiation found" : "Wehe: differentiation gone"
            _ = try? ChildCommand.run(notify, ["--app-name=Wehe", title, change.line], timeout: 5)
        }
        guard let onChange else { return }
        do {
            let outcome = try ChildCommand.run(
                "/bin/sh", ["-c", onChange], input: Array((json + "\n").utf8), capture: false, timeout: 30)
            if outcome.timedOut {
                say("wehe monitor: --on-change command stopped after 30 s: \(onChange)")
            } else if outcome.status != 0 {
                say(
                    "wehe monitor: --on-change command failed (\(outcome.status.map { "exit \($0)" } ?? "signal")): \(onChange)"
                )
            }
        } catch {
            say("wehe monitor: --on-change command could not start (\(error)): \(onChange)")
        }
    }
}
