import Foundation
import Synchronization
import WeheAnalysis
import WeheClient
import WeheCore
import WeheWire

/// Hands out history counts from the settings file, saving after each one (like the Java client's `info.txt`).
final class SettingsHistoryCounter: HistoryCounter {
    private let directory: DataDirectory
    private let settings: Mutex<WeheSettings>

    init(directory: DataDirectory, settings: WeheSettings) {
        self.directory = directory
        self.settings = Mutex(settings)
    }

    func next() async throws -> Int {
        let updated = settings.withLock { settings -> WeheSettings in
            settings.lastHistoryCount += 1
            return settings
        }
        try directory.save(updated)
        return updated.lastHistoryCount
    }
}

/// Asks for (or records) consent; throws the documented error when it cannot be obtained.
enum Consent {
    static func ensure(_ settings: inout WeheSettings, accept: Bool, strings: Strings, directory: DataDirectory) throws {
        if settings.consentAccepted { return }
        if accept {
            settings.consentAccepted = true
            try directory.save(settings)
            return
        }
        guard isatty(STDIN_FILENO) == 1 else { throw CLIError(code: .consentRequired, strings.consentRequired) }
        Terminal.printError(strings.consentTitle + "\n\n" + strings.consentText + "\n")
        FileHandle.standardError.write(Data(strings.consentPrompt.utf8))
        let answer = (readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        guard strings.consentAcceptedWords.contains(answer) else {
            throw CLIError(code: .consentRequired, strings.consentDeclined)
        }
        settings.consentAccepted = true
        try directory.save(settings)
    }
}

/// Runs `body` so that Ctrl-C cancels it (the client then closes its side channel so the server frees the slot).
enum Interrupts {
    /// Runs `body` in a child task next to a SIGINT watcher; the first Ctrl-C cancels `body`, which then throws
    /// its cancellation error. The default SIGINT action is restored afterwards.
    static func cancellingOnSIGINT<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let (interrupts, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        source.setEventHandler { continuation.yield() }
        // The source starts watching asynchronously; until then an ignored SIGINT would be lost, so wait for it.
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            source.setRegistrationHandler { registered.resume() }
            source.resume()
        }
        defer {
            source.cancel()
            continuation.finish()
            signal(SIGINT, SIG_DFL)
        }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                for await _ in interrupts { break }
                return nil
            }
            while let next = try await group.next() {
                group.cancelAll()
                if let value = next { return value }
            }
            throw CancellationError()
        }
    }
}

extension ClientOptions {
    /// The decision rule from options over settings.
    func verdictRules(_ settings: WeheSettings) throws -> VerdictRules {
        try TestSelection.verdictRules(
            rules: rules ?? settings.ruleSet, area: areaThreshold ?? settings.areaThreshold,
            pValue: pValueThreshold ?? settings.ksPValueThreshold)
    }
}

/// Loading tests from a replay directory, shared by `wehe run` and `wehe demo`.
enum TestSelection {
    /// The decision rule from a rule-set name and optional thresholds.
    static func verdictRules(rules: String, area: Double?, pValue: Double?) throws -> VerdictRules {
        guard let ruleSet = VerdictRuleSet(rawValue: rules) else {
            throw CLIError(code: .invalidInput, "--rules must be android or ios")
        }
        let rules = VerdictRules(ruleSet: ruleSet, customAreaThreshold: area, customKSPValueThreshold: pValue)
        do {
            return try rules.validated()
        } catch {
            throw CLIError(code: .invalidInput, "\(error)")
        }
    }

    /// The catalog of a replay directory.
    static func catalog(_ library: ReplayLibrary) throws -> AppCatalog {
        do {
            return try library.catalog()
        } catch {
            throw CLIError(code: error.code == .unreadable ? .missingInput : .invalidInput, error.description)
        }
    }

    /// Loads the named tests and their traces.
    static func load(_ ids: [String], from library: ReplayLibrary, catalog: AppCatalog) throws -> [ReplayClient.Test] {
        var selected: [ReplayClient.Test] = []
        for id in ids {
            do {
                selected.append(try ReplayClient.Test.load(id, from: library, catalog: catalog))
            } catch {
                throw CLIError(error)
            }
        }
        return selected
    }

    /// Whether both traces of a catalog test are present.
    static func available(_ entry: CatalogEntry, _ library: ReplayLibrary, _ catalog: AppCatalog) -> Bool {
        guard let control = catalog.controlFile(for: entry) else { return false }
        let manager = FileManager.default
        return manager.fileExists(atPath: library.path(of: entry.originalFile))
            && manager.fileExists(atPath: library.path(of: control))
    }
}
