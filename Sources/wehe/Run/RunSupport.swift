import Foundation
import Synchronization
import WeheAnalysis
import WeheClient

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

/// Runs `body` in a task that Ctrl-C cancels (the client then closes its side channel so the server frees the
/// slot), and reports whether Ctrl-C was pressed.
enum Interrupts {
    static func cancellingOnSIGINT<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let task = Task { try await body() }
        source.setEventHandler { task.cancel() }
        source.resume()
        defer {
            source.cancel()
            signal(SIGINT, SIG_DFL)
        }
        return try await task.value
    }
}

extension ClientOptions {
    /// The decision rule from options over settings.
    func verdictRules(_ settings: WeheSettings) throws -> VerdictRules {
        let ruleName = rules ?? settings.ruleSet
        guard let ruleSet = VerdictRuleSet(rawValue: ruleName) else {
            throw CLIError(code: .invalidInput, "--rules must be android or ios")
        }
        let rules = VerdictRules(
            ruleSet: ruleSet, customAreaThreshold: areaThreshold ?? settings.areaThreshold,
            customKSPValueThreshold: pValueThreshold ?? settings.ksPValueThreshold)
        do {
            return try rules.validated()
        } catch {
            throw CLIError(code: .invalidInput, "\(error)")
        }
    }
}
