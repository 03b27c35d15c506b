import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Asks for (or records) consent; throws the documented error when it cannot be obtained. The caller checks first
/// that the data directory is usable (`DataDirectory.ensureUsable`), so that nobody is asked for a consent that
/// cannot then be recorded.
enum Consent {
    static func ensure(_ settings: inout WeheSettings, accept: Bool, strings: Strings, directory: DataDirectory) throws
    {
        if settings.consentAccepted { return }
        if accept {
            try record(&settings, directory)
            return
        }
        guard isatty(STDIN_FILENO) == 1 else { throw CLIError(code: .consentRequired, strings.consentRequired) }
        Terminal.printError(strings.consentTitle + "\n\n" + strings.consentText + "\n")
        FileHandle.standardError.write(Data(strings.consentPrompt.utf8))
        let answer = (readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        guard strings.consentAcceptedWords.contains(answer) else {
            throw CLIError(code: .consentRequired, strings.consentDeclined)
        }
        try record(&settings, directory)
    }

    /// Writes the consent alone into the settings file.
    private static func record(_ settings: inout WeheSettings, _ directory: DataDirectory) throws {
        try directory.update { $0.consentAccepted = true }
        settings.consentAccepted = true
    }
}
