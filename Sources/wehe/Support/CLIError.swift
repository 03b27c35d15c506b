import ArgumentParser

/// An error the CLI reports as one line on stderr with a documented exit code.
struct CLIError: Error, CustomStringConvertible {
    /// Documented exit codes (listed in `wehe --help`), in the spirit of the Java client's table.
    enum Code: Int32, CaseIterable {
        /// An input (file, samples, option value, settings) is invalid.
        case invalidInput = 1
        /// A needed file or directory is missing or unreadable.
        case missingInput = 3
        /// The consent was not given.
        case consentRequired = 4
        /// The server could not be reached.
        case unreachable = 5
        /// The TLS handshake failed (certificate not trusted).
        case tlsFailed = 6
        /// The server's port map has no entry for the replay (Java 7).
        case portMapMissing = 7
        /// No access envelope of any located server opened (Java 9; no fallback server).
        case noEnvelope = 9
        /// The server does not have this replay (`0;1`, Java 15).
        case replayUnknownOnServer = 15
        /// Another test from this address is running (`0;2`, Java 16).
        case addressBusy = 16
        /// The server is low on resources (`0;3`, Java 17).
        case serverBusy = 17
        /// Refused with another code (Java 18).
        case refused = 18
        /// The server broke the protocol or closed the side channel.
        case protocolViolation = 19
        /// The analyzer refused the request or had no result (Java 20-24).
        case analyzerFailed = 20
        /// The server stopped answering.
        case serverStoppedAnswering = 21
        /// The replay failed (connection reset, response cut short).
        case replayFailed = 22
        /// The analyzer answered for another user or test (Java 25).
        case resultMismatch = 25
        /// The history or settings could not be written.
        case storeFailed = 26
        /// A WeHeY localization ran but could not decide (the reason is printed).
        case localizationInconclusive = 27
        /// The locate service could not be reached (name, connection or TLS).
        case locateUnreachable = 28
        /// The locate service did not answer in time.
        case locateTimedOut = 29
        /// The locate service answered with an error object or a non-2xx status.
        case locateRefused = 30
        /// The locate service offered no server.
        case locateEmpty = 31
        /// The locate service's answer is not the locate v2 format.
        case locateMalformed = 32
        /// The access envelope closed during the test (the test was stopped).
        case envelopeClosed = 33
        /// The locate service answered 429: rate-limited by M-Lab (the message says when to try again).
        case locateRateLimited = 34
        /// A scheduled run refused: what is left of the monitor's data allowance is less than its cheapest test.
        case allowanceExhausted = 35
        /// The server does not have a recorded test and does not take it from clients (`--accept-client-traces`
        /// off), or refused the upload (too large, too long, a port it does not replay, the network's quota).
        case clientTracesRefused = 36
        /// A wrong option, argument, command or test name (EX_USAGE, as the argument parser's own usage errors).
        case usage = 64
        /// Interrupted (Ctrl-C).
        case interrupted = 130

        /// Every code in one paragraph, the source of `wehe help exit-codes` (one code a line) and Docs/client.md.
        static var table: String {
            """
            Exit codes: 0 success; 1 invalid input; 3 missing file; 4 consent not given; \
            5 server unreachable; 6 TLS failure; 7 no port-map entry; 9 no access envelope opened (fleet); \
            15 replay unknown on the server; \
            16 another test from this address is running; 17 server low on resources; 18 refused (other code); \
            19 protocol violation; 20 analyzer failed or no result; 21 server stopped answering; 22 replay failed; \
            25 result for another user or test; 26 history or settings not writable; 27 localization inconclusive; \
            28 locate service unreachable; 29 locate timed out; 30 locate answered an error; 31 locate offered no \
            server; 32 locate answer malformed; 33 access envelope closed during the test; \
            34 rate-limited by locate (429); 35 monitor's data allowance too small for any test; \
            36 the server does not run this recorded test (it takes no uploads, or refused this one); \
            64 usage error (a wrong option, argument, command or test name); 130 interrupted (Ctrl-C).
            """
        }
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
        let language = Strings.current.withLock { $0 } ?? Strings.select(nil).language
        if let lead = Strings(language: language).errorLead(code) {
            Terminal.printError("wehe : \(lead) — \(message)")
            return ExitCode(code.rawValue)
        }
        Terminal.printError("wehe: \(message)")
        return ExitCode(code.rawValue)
    }
}
