import Foundation
import WeheClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Asks for (or records) consent; throws the documented error when it cannot be obtained. The caller checks first
/// that the data directory is usable (`DataDirectory.ensureUsable`), so that nobody is asked for a consent that
/// cannot then be recorded.
enum Consent {
    static func ensure(
        _ settings: inout WeheSettings, accept: Bool, strings: Strings, directory: DataDirectory,
        cost: TestCost? = nil
    ) throws {
        if settings.consentAccepted { return }
        if accept {
            try record(&settings, directory)
            return
        }
        guard isatty(STDIN_FILENO) == 1 else { throw CLIError(code: .consentRequired, strings.consentRequired) }
        Terminal.printError(
            strings.consentTitle + "\n\n" + strings.consentText(data: cost.map { strings.costSentence($0) } ?? "")
                + "\n")
        FileHandle.standardError.write(Data(strings.consentPrompt.utf8))
        let answer = (readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        guard strings.consentAcceptedWords.contains(answer) else {
            throw CLIError(code: .consentRequired, strings.consentDeclined)
        }
        try record(&settings, directory)
    }

    /// Asks before a run that moves more than `askAboveBytes` or lasts more than `askAboveSeconds` (usual cost, no
    /// confirmation runs), unless `yes`; off a terminal the run is refused with the cost and `--yes` named.
    static func confirmCost(_ cost: TestCost, tests: Int, yes: Bool, strings: Strings) throws {
        guard !yes, cost.bytes > askAboveBytes || cost.seconds > askAboveSeconds else { return }
        guard isatty(STDIN_FILENO) == 1 else {
            throw CLIError(code: .consentRequired, strings.costNotConfirmed(cost))
        }
        FileHandle.standardError.write(Data(strings.costQuestion(cost, tests: tests).utf8))
        let answer = (readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        guard strings.consentAcceptedWords.contains(answer) else {
            throw CLIError(code: .consentRequired, strings.costDeclined)
        }
    }

    /// A run above 200 MB …
    static let askAboveBytes = 200_000_000
    /// … or 5 minutes is asked for first.
    static let askAboveSeconds = 300.0

    /// Writes the consent alone into the settings file.
    private static func record(_ settings: inout WeheSettings, _ directory: DataDirectory) throws {
        try directory.update { $0.consentAccepted = true }
        settings.consentAccepted = true
    }
}
