import ArgumentParser
import Foundation
import WeheClient
import WeheCore
import WeheWire

/// `wehe run <test>...` / `wehe run --all`: run differentiation tests against a Wehe server.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run differentiation tests (apps or ports) against a Wehe server.",
        discussion: """
            `wehe replays` lists the tests; `wehe run --all` runs every one whose traces are present. \
            \(CLIError.Code.pointer)
            """)

    @Argument(help: "Test ids from the catalog (youtube, netflix, port853s …).")
    var tests: [String] = []

    @Flag(name: .long, help: "Run every test of the catalog whose traces are present.")
    var all = false

    @OptionGroup var connection: ServerOptions

    @Flag(name: .long, help: "After a differentiation verdict, locate it with a WeHeY server pair (see `localize`).")
    var localize = false

    @Flag(name: .long, help: "After a differentiation verdict, find the bytes the classifier matches (see `dpi`).")
    var dpi = false
    @OptionGroup(title: "DPI search (with --dpi)") var dpiFlags: DPIFlags

    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions
    @OptionGroup(title: "Localization (with --localize)") var localization: LocalizationFlags

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Also run more rounds of both replays, each in coin-flipped order, for a verdict sensitive to smaller "
                + "slowdowns."))
    var interleaved = false

    @Option(name: .long, help: "Rounds of the interleaved mode, the published test included (8-24, default 10).")
    var rounds = 10

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "The adaptive verdict: short rounds of both replays in coin-flipped order until the evidence suffices "
                + "(about the data of one test; sees mild throttling). Says its cost before it starts."))
    var adaptive = false

    @Flag(name: .long, help: "The published Wehe test (the default today; kept for comparison with the Wehe apps).")
    var published = false

    func validate() throws {
        if tests.isEmpty && !all { throw ValidationError("name at least one test, or pass --all") }
        if !(8...24).contains(rounds) { throw ValidationError("--rounds must be between 8 and 24") }
        if [adaptive, interleaved, published].filter({ $0 }).count > 1 {
            throw ValidationError("choose one of --adaptive, --interleaved and --published")
        }
    }

    func run() async throws {
        try await DPIStep.$flags.withValue(dpi ? dpiFlags : nil) { try await perform() }
    }

    private func perform() async throws {
        try await Self.perform(
            options: options, connection: connection, replays: replays,
            localization: localize ? localization : nil, rounds: interleaved ? rounds : nil, adaptive: adaptive
        ) { library, catalog in
            all ? catalog.entries.filter { TestSelection.available($0, library, catalog) }.map(\.id) : tests
        }
    }

    /// What `wehe run` and `wehe localize` share: settings, consent, the chosen tests, the data directory's test
    /// lock, the history, the fleet path (or the given server), then `execute`; every error as one line and its exit
    /// code. `localization` is `nil` for tests without a localization.
    static func perform(
        options: ClientOptions,
        connection: ServerOptions,
        replays: ReplayDirectoryOption,
        localization: LocalizationFlags?,
        rounds: Int? = nil,
        adaptive: Bool = false,
        ids: (ReplayLibrary, AppCatalog) -> [String]
    ) async throws {
        let directory = DataDirectory.resolve(options.dataDirectory)
        do {
            let strings = Strings.select(try options.language ?? directory.loadSettings().language)
            // What the person typed is checked first (a mistyped test name gets its answer at once), then whether
            // the data directory can record anything, and only then is consent asked.
            let replayDirectory = try replays.resolved()
            let library = try replays.library()
            let catalog = try TestSelection.catalog(library)
            let selected = try TestSelection.load(ids(library, catalog), from: library, catalog: catalog)
            try directory.ensureUsable(strings)
            var settings = try directory.settingsRecordingUserID()
            // One estimate, said in the consent text and asked for above 200 MB or 5 minutes.
            let mode: TestCost.Mode =
                adaptive
                ? .adaptive
                : rounds.map { .interleaved(rounds: $0) } ?? .published(confirmation: !options.noConfirmation)
            let cost = TestCost.total(selected.map { TestCost.of($0, mode: mode) })
            try Consent.ensure(
                &settings, accept: options.acceptConsent, strings: strings, directory: directory, cost: cost)
            try Consent.confirmCost(cost, tests: selected.count, yes: options.yes, strings: strings)
            let lock = try TestLock.acquire(directory, strings: strings)
            defer { withExtendedLifetime(lock) {} }
            let setup = connection.setup(options)
            var configuration = try setup.configuration(settings: settings, directory: directory)
            configuration.clientTraceUpload = RecordedTraceUpload.make(selected, library: library)
            let fleet = try setup.fleetPlan(settings: settings, replayDirectory: replayDirectory)
            let expected = setup.expectedCertificate(settings: settings, plan: fleet)
            // On the fleet, the localization's pair is located and entered the same way (site pairs, envelopes).
            let localizing = try localization.map { flags in
                var options = try flags.options()
                options.fleet = fleet?.configuration
                return (options: options, force: flags.force)
            }
            do {
                try await History.with(directory) { history in
                    configuration.store = history
                    let route = try FleetStep.route(
                        fleet, configuration: configuration, directory: directory, json: options.json)
                    try await Self.execute(
                        selected, configuration: configuration, strings: strings, json: options.json,
                        localization: localizing, route: route, rounds: rounds, adaptive: adaptive)
                }
            } catch let error as CLIError {
                throw error.explainingTrust(expected)
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }

    /// Runs the tests one after the other with progress, then prints the table (or JSON lines). With
    /// `localization`, each test with a differentiation verdict (every test when forced) is then localized; an
    /// inconclusive localization makes the command exit 27 once every test ran. On the fleet (`route` with a
    /// session), each test, each localization and each DPI search runs in an access envelope of its own, opened for
    /// it and closed after it (its closing stops the step with exit 33); a step that cannot fit in one envelope is
    /// refused before anything runs.
    @discardableResult static func execute(
        _ tests: [ReplayClient.Test],
        configuration: ReplayClientConfiguration,
        strings: Strings,
        json: Bool,
        localization: (options: LocalizationOptions, force: Bool)? = nil,
        route: FleetRoute? = nil,
        rounds: Int? = nil,
        adaptive: Bool = false
    ) async throws -> [TestResult] {
        let route = route ?? FleetRoute(session: nil, base: configuration, trustPEM: nil, json: json)
        let renderer = ProgressRenderer(strings: strings, json: json, tests: tests)
        var results: [TestResult] = []
        var localized: [LocalizationResult] = []
        var failure: CLIError?
        let plan = RunPlan(tests: tests)
        if let fleet = route.session?.configuration {
            let budget = try FleetBudget(
                tests: tests, fleet: fleet, confirmation: configuration.confirmation, rounds: rounds,
                adaptive: adaptive, localizing: localization != nil, searching: DPIStep.flags != nil)
            if let line = budget.announcement { FleetStep.say(line, json: json) }
        }
        for (index, test) in tests.enumerated() {
            if let line = plan.announce(index, strings: strings) { renderer.note(line) }
            if adaptive { renderer.note("\(test.entry.id): " + AdaptivePlan(test: test).costText) }
            do {
                let wantsLocalization = { (result: TestResult) in
                    localization != nil && (result.verdict == .differentiation || localization?.force == true)
                }
                // A localization runs in the test's envelope when it fits in what is left of it (no second locate
                // call or envelope), else in an envelope of its own on the test's machine.
                let (result, machine, configured, localizedInside) = try await route.within { entered in
                    let client = ReplayClient(configuration: entered.configuration)
                    let result = try await Interrupts.cancellingOnSIGINT { () async throws -> TestResult in
                        try await Self.guarded(entered.envelope) {
                            if adaptive {
                                return try await client.runAdaptive(test) { renderer.handle($0) }
                            }
                            if let rounds {
                                return try await client.runInterleaved(test, rounds: rounds) { renderer.handle($0) }
                            }
                            return try await client.run(test) { renderer.handle($0) }
                        }
                    }
                    if json {
                        print(ResultOutput.json(result, server: entered.configuration.server))
                    } else {
                        renderer.note(strings.verdictLine(result))
                    }
                    guard let localization, wantsLocalization(result),
                        entered.fits(FleetBudget.localizationSeconds(test))
                    else {
                        let none: Result<LocalizationResult?, any Error>? = nil
                        return (result, entered.machine, entered.configuration, none)
                    }
                    // Its failure is thrown after the test's result is kept.
                    let located: Result<LocalizationResult?, any Error>
                    do {
                        located = .success(
                            try await LocalizationStep.run(
                                test, after: result, configuration: entered.configuration,
                                options: localization.options, force: localization.force, strings: strings,
                                json: json, renderer: renderer, envelope: entered.envelope))
                    } catch {
                        located = .failure(error)
                    }
                    return (result, entered.machine, entered.configuration, located)
                }
                results.append(result)
                if let localizedInside {
                    if let located = try localizedInside.get() { localized.append(located) }
                } else if let localization, wantsLocalization(result) {
                    // The localization runs on the test's machine, in an envelope of its own.
                    let located = try await route.within(machine: machine) { entered in
                        try await LocalizationStep.run(
                            test, after: result, configuration: machine == nil ? configured : entered.configuration,
                            options: localization.options, force: localization.force, strings: strings, json: json,
                            renderer: renderer, envelope: entered.envelope)
                    }
                    if let located { localized.append(located) }
                } else if localization != nil {
                    renderer.note(strings.localizationSkipped(test.entry.id))
                }
                if let flags = DPIStep.flags {
                    if result.verdict == .differentiation || flags.force {
                        _ = try await route.within(machine: machine) { entered in
                            try await DPIStep.run(
                                test, after: result, configuration: machine == nil ? configured : entered.configuration,
                                flags: flags, json: json, renderer: renderer, envelope: entered.envelope)
                        }
                    } else {
                        // No envelope for a search that will not run: DPIStep says why.
                        try await DPIStep.run(
                            test, after: result, configuration: configured, flags: flags, json: json,
                            renderer: renderer)
                    }
                }
            } catch let error as ReplayClientError {
                failure = error.code == .cancelled ? CLIError(code: .interrupted, strings.interrupted) : CLIError(error)
                break
            } catch let error as CLIError {
                failure = error
                break
            } catch let error as FleetError {
                failure = CLIError(error)
                break
            }
        }
        if !json, !results.isEmpty {
            print("")
            print(ResultOutput.table(results, strings: strings, color: Terminal.stdoutIsTerminal))
        }
        if let failure { throw failure }
        if let inconclusive = localized.first(where: { $0.verdict == .inconclusive }) {
            // A fleet step of the localization (a site not located, an envelope) exits with that step's code.
            if let reason = inconclusive.reason, let fleet = reason.fleetError {
                throw CLIError(FleetError(fleet, "\(inconclusive.test): localization: \(reason.message)"))
            }
            throw CLIError(
                code: .localizationInconclusive,
                "\(inconclusive.test): "
                    + strings.localizationLine(
                        inconclusive.verdict.rawValue, reason: inconclusive.reason?.code.rawValue))
        }
        return results
    }

    /// Runs `body` within the envelope's life when there is one.
    static func guarded<T: Sendable>(_ envelope: AccessEnvelope?, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        guard let envelope else { return try await body() }
        return try await envelope.guarding(body)
    }

    static func readCertificate(_ path: String?) throws -> String? {
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError(code: .missingInput, "cannot read the certificate file \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
