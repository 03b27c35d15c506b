import ArgumentParser
import Foundation
import Logging
import WeheClient
import WeheCore
import WeheWire

/// `wehe demo`: a newcomer's first command. Runs our server inside this process on loopback with the shared traces
/// (or the bundled synthetic ones), runs a couple of short app tests against it and prints the verdicts. No root,
/// no network, no server to set up, no consent prompt (nothing leaves the computer), nothing added to the history.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a couple of tests against a Wehe server started inside this process on loopback.",
        discussion: """
            Traces: --replays, else $WEHE_REPLAYS, else yours (~/.local/share/wehe/replays), a checkout's, the \
            installed ones, else the bundled synthetic ones. Without --tests or --throttle it shows both outcomes: \
            of the two app tests with the shortest traces, a middlebox on 127.0.0.2 slows the first one's own \
            traffic but not its control (differentiation), then the second one's traffic and its control alike \
            (no differentiation), and one line says what happened (about 10 s). With --throttle <test>:<rate> (for example \
            molotovtv:20mbit) a userspace throttling middlebox on 127.0.0.2 recognises that test's flows by their \
            first bytes, as an ISP's DPI box would, and slows them down, so the verdict shows differentiation. A \
            cap only shows when it is well below the rate the trace needs on average (YouTube's trace needs about \
            0.4 Mbit/s, so youtube:1.5mbit changes its bursts but not its average); the demo warns when it is not. \
            Demo results are not added to your history. \(CLIError.Code.pointer)
            """)

    @Option(name: .long, help: "Comma-separated test ids (default: two app tests showing both outcomes).")
    var tests: String?

    @Option(name: .long, help: "Throttle one test through the middlebox, e.g. molotovtv:20mbit.")
    var throttle: String?

    @Option(name: .customLong("replays"), help: "Directory of replay traces and their catalog.")
    var replays: String?

    @Flag(name: .long, help: "Print one JSON object per test on stdout (progress goes to stderr).")
    var json = false

    @Option(name: .customLong("lang"), help: "Language of messages: en or fr (default: the locale).")
    var language: String?

    @Option(
        name: .customLong("area-threshold"), help: "Area threshold as a fraction (default 0.5, 0.3 above 10 Mbit/s).")
    var areaThreshold: Double?

    @Option(name: .customLong("p-threshold"), help: "KS p-value threshold (default 0.01).")
    var pValueThreshold: Double?

    @Option(name: .customLong("rules"), help: "Decision rule: android (default) or ios.")
    var rules = "android"

    @Flag(name: .long, help: "Re-run a test whose first result is not clear, as `wehe run` does (off in the demo).")
    var confirmation = false

    func run() async throws {
        do {
            let strings = Strings.select(language)
            let throttle = try throttle.map { try DemoThrottle(parsing: $0) }
            let directory = try Self.replayDirectory(replays)
            let library = ReplayLibrary(directory: directory)
            let catalog = try TestSelection.catalog(library)
            // Without --tests or --throttle: one test slowed alone, one slowed with its control (DemoPlan).
            let plan = tests == nil && throttle == nil ? try Self.defaultPlan(library, catalog) : nil
            var ids =
                try plan.map { [$0.slowed.entry.id, $0.even.entry.id] }
                ?? tests.map(Self.split) ?? Self.defaultTests(library, catalog)
            if let throttle,
                !ids.contains(where: { catalog.entry(named: $0)?.id == catalog.entry(named: throttle.test)?.id })
            {
                ids.append(throttle.test)
            }
            let selected = try TestSelection.load(ids, from: library, catalog: catalog)
            let throttled = throttle.flatMap { throttle in
                selected.first { $0.entry.id == catalog.entry(named: throttle.test)?.id }.map { (throttle, $0) }
            }
            Terminal.printError(strings.demoNote(directory))
            var middlebox: DemoEnvironment.Throttle?
            if let plan {
                Terminal.printError(
                    strings.demoPlanNote(
                        slowed: plan.slowed.entry.name, even: plan.even.entry.name,
                        bitsPerSecond: plan.rateBitsPerSecond))
                let classifier = plan.classifier
                middlebox = DemoEnvironment.Throttle(rateBitsPerSecond: plan.rateBitsPerSecond) { _ in classifier }
            }
            if let throttled {
                let (test, rate) = (throttled.1, throttled.0.rateBitsPerSecond)
                middlebox = DemoEnvironment.Throttle(rateBitsPerSecond: rate) { ports in
                    DemoThrottle.classifier(for: test, tcpPorts: ports)
                }
                Terminal.printError(strings.demoThrottleNote(throttled.1.entry.name, throttled.0.rateBitsPerSecond))
                let average = Self.averageBitsPerSecond(throttled.1.original)
                if let average, Double(throttled.0.rateBitsPerSecond) > average / 2 {
                    Terminal.printError(
                        strings.demoThrottleTooHigh(throttled.1.entry.name, averageBitsPerSecond: average))
                }
            }
            let rules = try TestSelection.verdictRules(rules: rules, area: areaThreshold, pValue: pValueThreshold)
            let json = self.json
            let confirmation = self.confirmation
            // The analyzer's HTTP server reports connections still open at shutdown (the middlebox's) as errors;
            // the demo's own outcome is in the client's messages, so the server stays quiet unless asked.
            var serverLogger = Logger(label: "wehe.demo.server")
            if ProcessInfo.processInfo.environment["WEHE_LOG_LEVEL"] == nil { serverLogger.logLevel = .critical }
            let started = ContinuousClock.now
            let results = try await DemoEnvironment.run(
                replays: directory, throttle: middlebox, sampleCount: plan == nil ? 100 : DemoPlan.sampleCount,
                logger: serverLogger
            ) { endpoints in
                let configuration = ReplayClientConfiguration(
                    server: endpoints.server, userID: WeheSettings.makeUserID(),
                    trustedCertificatesPEM: endpoints.trustedPEM, sideChannelPort: endpoints.sideChannelPort,
                    analyzerPort: endpoints.analyzerPort, verdictRules: rules, confirmation: confirmation)
                return try await RunCommand.execute(
                    selected, configuration: configuration, strings: strings, json: json)
            }
            // One line on what just happened (on stderr with --json, whose stdout is the records alone).
            if let plan, let slowed = results.first(where: { $0.test == plan.slowed.entry.id }),
                let even = results.first(where: { $0.test == plan.even.entry.id })
            {
                let seconds = (ContinuousClock.now - started).inSeconds
                let line = strings.demoOutcome(slowed: slowed, even: even) + " (\(RunPlan.duration(seconds)))"
                if json { Terminal.printError(line) } else { print("\n" + Terminal.wrap(line)) }
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }

    /// The rate a trace needs on average when replayed with its recorded timing (all payload bytes, both ways,
    /// over the recorded duration); `nil` for a trace without duration.
    static func averageBitsPerSecond(_ trace: ReplayTrace) -> Double? {
        guard trace.duration > 0 else { return nil }
        let bytes = trace.packets.reduce(0) { $0 + $1.payload.count + $1.responseLength }
        return Double(bytes) * 8 / trace.duration
    }

    /// The default plan from the app tests whose traces are present; `nil` (the two shortest tests, unthrottled)
    /// when fewer than two TCP app tests are.
    static func defaultPlan(_ library: ReplayLibrary, _ catalog: AppCatalog) throws -> DemoPlan? {
        let available = catalog.entries.filter { !$0.isPortTest && TestSelection.available($0, library, catalog) }
        let tests = try TestSelection.load(available.map(\.id), from: library, catalog: catalog)
        return DemoPlan.choose(tests)
    }

    static func split(_ list: String) -> [String] {
        list.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The two app tests (not port tests) with the shortest catalog time whose traces are present; catalog order
    /// breaks ties.
    static func defaultTests(_ library: ReplayLibrary, _ catalog: AppCatalog) throws -> [String] {
        let candidates = catalog.entries.enumerated()
            .filter { !$0.element.isPortTest && TestSelection.available($0.element, library, catalog) }
            .sorted { ($0.element.durationSeconds, $0.offset) < ($1.element.durationSeconds, $1.offset) }
        guard !candidates.isEmpty else {
            throw CLIError(
                code: .missingInput, "the replay directory \(library.directory) has no app test with both traces")
        }
        return candidates.prefix(2).map(\.element.id)
    }

    /// `--replays`, else the traces every command finds (`ReplayDirectoryOption.candidates`: the user's, a
    /// checkout's, the installed ones), else the small synthetic traces compiled into `wehe`, else
    /// `Fixtures/replays` in the current directory (a checkout).
    static func replayDirectory(_ explicit: String?) throws -> String {
        if let explicit { return explicit }
        var candidates = ReplayDirectoryOption.candidates()
        if let found = candidates.first(where: { ReplayLibrary.isDirectory($0) }) { return found }
        if let embedded = EmbeddedDemoReplays.directory(), ReplayLibrary.isDirectory(embedded) { return embedded }
        candidates.append("Fixtures/replays")
        if ReplayLibrary.isDirectory("Fixtures/replays") { return "Fixtures/replays" }
        throw CLIError(
            code: .missingInput,
            "no replay directory found (tried \(candidates.joined(separator: ", "))); pass --replays")
    }
}
