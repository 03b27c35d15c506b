import ArgumentParser

/// An error the CLI reports as one line on stderr with a documented exit code.
struct CLIError: Error, CustomStringConvertible {
    /// Documented exit codes (also listed in `wehe --help`).
    enum Code: Int32 {
        /// An input (file, samples) is invalid.
        case invalidInput = 1
        /// A needed file or directory is missing or unreadable.
        case missingInput = 3
    }

    let code: Code
    let message: String

    init(code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }

    /// Prints the message and returns the exit code to throw.
    func exit() -> ExitCode {
        Terminal.printError("wehe: \(message)")
        return ExitCode(code.rawValue)
    }
}
