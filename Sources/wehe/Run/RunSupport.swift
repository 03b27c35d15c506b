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

/// Runs `body` so that Ctrl-C cancels it (the client then closes its side channel so the server frees the slot).
enum Interrupts {
    /// Runs `body` in a child task next to a SIGINT watcher; the first Ctrl-C cancels `body`, which then throws
    /// its cancellation error. The default SIGINT action is restored afterwards.
    static func cancellingOnSIGINT<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let (interrupts, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        source.setEventHandler { continuation.yield() }
        source.resume()
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
