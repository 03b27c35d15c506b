import ArgumentParser
import WeheClient
import WeheCore
import WeheWire

/// `wehe localize <test>`: a normal test against the configured server, then — when it finds differentiation, or
/// with `--force` — a WeHeY localization with the server pair that server names (protocol.md section 12).
struct LocalizeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "localize",
        abstract: "Run a test, then locate its differentiation: in your access network or further away (WeHeY).",
        discussion: """
            The test first runs against the configured server. If it shows differentiation (or with --force), that \
            server names a pair of servers whose paths to you meet only in your access network; the original \
            replay then runs to both at once, then the control, and the first server of the pair compares the \
            simultaneous replays with the single one. Verdicts: "the throttling is in your access network", "no \
            evidence that it is in your access network", or "inconclusive" with the reason (exit 27). \
            \(CLIError.Code.table)
            """)

    @Argument(help: "The test id from the catalog (youtube, netflix …).")
    var test: String

    @OptionGroup var connection: ServerOptions

    @OptionGroup var replays: ReplayDirectoryOption
    @OptionGroup var options: ClientOptions
    @OptionGroup(title: "Localization") var localization: LocalizationFlags

    func run() async throws {
        let directory = DataDirectory.resolve(options.dataDirectory)
        do {
            var settings = try directory.loadSettings()
            let strings = Strings.select(options.language ?? settings.language)
            try Consent.ensure(&settings, accept: options.acceptConsent, strings: strings, directory: directory)
            let replayDirectory = try replays.resolved()
            let library = ReplayLibrary(directory: replayDirectory)
            let catalog = try TestSelection.catalog(library)
            let selected = try TestSelection.load([test], from: library, catalog: catalog)
            let lock = try TestLock.acquire(directory, strings: strings)
            defer { withExtendedLifetime(lock) {} }
            let setup = connection.setup(options)
            var configuration = try setup.configuration(settings: settings, directory: directory)
            let fleet = try setup.fleetPlan(settings: settings, replayDirectory: replayDirectory)
            let expected = setup.expectedCertificate(settings: settings, plan: fleet)
            let localizing = (options: try localization.options(), force: localization.force)
            do {
                try await History.with(directory) { history in
                    configuration.store = history
                    try await FleetStep.withAccess(
                        fleet, configuration: configuration, directory: directory, json: options.json
                    ) { configuration, envelope in
                        try await RunCommand.execute(
                            selected, configuration: configuration, strings: strings, json: options.json,
                            localization: localizing, envelope: envelope)
                    }
                }
            } catch let error as CLIError {
                throw error.explainingTrust(expected)
            }
        } catch let error as CLIError {
            throw error.exit()
        }
    }
}
