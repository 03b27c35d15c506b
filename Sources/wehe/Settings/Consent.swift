import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Asks for (or records) consent; throws the documented error when it cannot be obtained.
enum Consent {
    static func ensure(_ settings: inout WeheSettings, accept: Bool, strings: Strings, directory: DataDirectory) throws
    {
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
