import Foundation
import WeheClient
import WeheCore
import WeheStore
import WeheWeb
import WeheWire

/// Runs the tests started from `wehe dashboard`'s "new test" page: the same `ReplayClient` run as `wehe run`
/// (server, certificate, thresholds and history counts from the settings and the command's options, built by
/// `ClientSetup`), storing the result in the history the dashboard shows.
struct ClientTestLauncher: TestLauncher {
    /// The data directory (settings file).
    let directory: DataDirectory
    /// The settings read at start, used while no settings file exists (so the user id stays the one shown).
    let initialSettings: WeheSettings
    /// Options over settings.
    let setup: ClientSetup
    /// The replay directory, when one was found.
    let replayDirectory: String?
    /// Directories whose tests join it: the user's recordings.
    var additionalDirectories: [String] = []
    /// The history the results are stored in.
    let store: any ResultStore
    /// Messages in the person's language.
    let strings: Strings

    /// The catalog tests whose traces are present.
    func availableTests() async throws -> [LaunchableTest] {
        let library = try self.library()
        let catalog = try TestSelection.catalog(library)
        return catalog.entries.filter { TestSelection.available($0, library, catalog) }.map { entry in
            // The same estimate as the command line's (both replays, both directions), from the traces.
            let cost = (try? ReplayClient.Test.load(entry.id, from: library, catalog: catalog)).map {
                TestCost.of($0, mode: .published(confirmation: false))
            }
            var test = LaunchableTest(
                id: entry.id, name: entry.name,
                category: entry.category.rawValue.lowercased().replacingOccurrences(of: "_", with: " "),
                durationSeconds: cost?.seconds, sizeMB: cost.map { Double($0.bytes) / 1_000_000 })
            test.recorded = entry.recorded
            return test
        }
    }

    /// What the largest test offered here costs, for the consent text.
    private func largestTestSentence() throws -> String {
        let library = try self.library()
        let catalog = try TestSelection.catalog(library)
        let costs = catalog.entries.filter { TestSelection.available($0, library, catalog) }.compactMap { entry in
            (try? ReplayClient.Test.load(entry.id, from: library, catalog: catalog)).map {
                (entry.name, TestCost.of($0))
            }
        }
        guard let largest = costs.max(by: { $0.1.bytes < $1.1.bytes }) else { return "" }
        return strings.costSentence(largest.1, largest: largest.0)
    }

    /// The consent text while consent was not given: the page asks for it with a checkbox.
    func consentRequest() async throws -> ConsentRequest? {
        try currentSettings().consentAccepted
            ? nil
            : ConsentRequest(title: strings.consentTitle, text: strings.consentText(data: try largestTestSentence()))
    }

    /// Records the consent ticked on the page in the settings file, as `--accept-consent` does.
    func acceptConsent() async throws {
        var settings = try currentSettings()
        try Consent.ensure(&settings, accept: true, strings: strings, directory: directory)
    }

    /// Runs one test to its end and returns the key it was stored under.
    /// - Throws: `CLIError` (consent not given, no replays, unknown test, settings unreadable) or the client's
    ///   error as a `CLIError` (unreachable server, refused, replay failed, cancelled).
    func runTest(id: String, progress: @escaping @Sendable (TestProgressEvent) -> Void) async throws -> TestKey {
        let settings = try currentSettings()
        guard settings.consentAccepted else {
            throw CLIError(code: .consentRequired, strings.consentRequired)
        }
        let library = try self.library()
        let catalog = try TestSelection.catalog(library)
        guard let test = try TestSelection.load([id], from: library, catalog: catalog).first else {
            throw CLIError(code: .invalidInput, "no test \(id)")
        }
        var configuration = try setup.configuration(settings: settings, directory: directory)
        configuration.store = store
        let lock = try TestLock.acquire(directory, strings: strings)
        defer { withExtendedLifetime(lock) {} }
        // The same path as `wehe run`: the fleet (locate, then an access envelope open for the whole test) for the
        // default server, else the configured server.
        let plan = try setup.fleetPlan(settings: settings, replayDirectory: replayDirectory)
        progress(.phase(.connecting))
        let result: TestResult
        do {
            result = try await FleetStep.withAccess(
                plan, configuration: configuration, directory: directory, json: true
            ) { configuration, envelope in
                let client = ReplayClient(configuration: configuration)
                progress(.message(strings.connectingWords(configuration.server)))
                let words = ProgressWords(strings: strings, tests: [test])
                return try await RunCommand.guarded(envelope) {
                    try await client.run(test) { event in Self.report(event, to: progress, words: words) }
                }
            }
        } catch let error as ReplayClientError {
            if error.code == .cancelled { throw CancellationError() }
            throw CLIError(error)
        } catch let error as FleetError {
            throw CLIError(error)
        }
        return TestKey(userID: result.userID, historyCount: result.historyCount)
    }

    /// The settings file's content, or the settings read at start when there is no file yet.
    private func currentSettings() throws -> WeheSettings {
        FileManager.default.fileExists(atPath: directory.settingsPath) ? try directory.loadSettings() : initialSettings
    }

    private func library() throws -> ReplayLibrary {
        guard let replayDirectory else {
            throw CLIError(
                code: .missingInput, "no replay directory was found; restart `wehe dashboard` with --replays <dir>")
        }
        return ReplayLibrary(directory: replayDirectory, additionalDirectories: additionalDirectories)
    }

    /// Translates client events into the dashboard's progress events; the log's lines in plain words (`words`):
    /// what runs, the data moved and left, the time left (a progress line every few seconds of a replay).
    static func report(
        _ event: ReplayClientEvent, to progress: (TestProgressEvent) -> Void, words: ProgressWords
    ) {
        switch event {
        case .testStarted(let test, _, let isConfirmation):
            progress(.phase(.connecting))
            progress(.message(words.started(test, isConfirmation: isConfirmation)))
            progress(.fraction(isConfirmation ? 0.5 : 0.02))
        case .replayStarted(let test, let role, _, _):
            progress(.phase(role == .original ? .original : .control))
            progress(.message(words.replayStarted(test, role: role)))
        case .replayProgress(let test, let role, let snapshot):
            if let line = words.periodicProgress(test, snapshot) { progress(.message(line)) }
            let seconds =
                Double(snapshot.elapsed.components.seconds)
                + Double(snapshot.elapsed.components.attoseconds) / 1e18
            progress(.sample(role, seconds: seconds, mbps: snapshot.currentMbps))
            if snapshot.totalPackets > 0 {
                let done = min(1, Double(snapshot.packetsSent) / Double(snapshot.totalPackets))
                progress(.fraction(0.05 + 0.4 * (Double(role.rawValue) + done)))
            }
        case .replayFinished(_, let role, let outcome):
            words.replayFinished(outcome)
            progress(.fraction(0.05 + 0.4 * Double(role.rawValue + 1)))
        case .portBlocked(let test, let port):
            progress(.message(words.strings.portBlockedWords(words.name(test), port: port)))
        case .analysisRequested:
            progress(.phase(.analysing))
            progress(.fraction(0.9))
        case .confirmationScheduled(_, _, let first):
            progress(.message(words.strings.confirmationLine(first)))
        case .testFinished:
            progress(.phase(.saving))
            progress(.fraction(1))
        case .roundStarted(let test, let round, let rounds):
            progress(.message(words.roundStarted(test, round: round, of: rounds)))
            progress(.fraction(0.05 + 0.9 * Double(round - 1) / Double(max(1, rounds))))
        case .roundFinished(_, let round):
            progress(.message("round \(round.round): \(round.status)"))
            progress(.fraction(min(0.9, Double(round.bytesMoved) / Double(max(1, round.maximumBytes)))))
        }
    }
}
