/// The error of the `WeheWeb` target: a dashboard request or set-up failed.
///
/// Route handlers translate it into an HTTP status and a localized error page (or a JSON body for API routes);
/// the message never carries a stack trace and is always escaped before it reaches HTML.
package struct WeheWebError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The requested test, run or page does not exist (404).
        package static let notFound = Code(name: "notFound")
        /// A query parameter, form field or path component is malformed (400).
        package static let invalidParameter = Code(name: "invalidParameter")
        /// The result store could not answer (database down, closed or failing) (503).
        package static let storeUnavailable = Code(name: "storeUnavailable")
        /// No test launcher is configured, or it refused to start a test (503).
        package static let launcherUnavailable = Code(name: "launcherUnavailable")
        /// The request came from a host or origin the dashboard does not serve (403).
        package static let forbidden = Code(name: "forbidden")
        /// Too many tests are running or queued to start another one (429).
        package static let tooManyRuns = Code(name: "tooManyRuns")
        /// A template or static resource of the dashboard is missing or does not parse (500).
        package static let resourceMissing = Code(name: "resourceMissing")
        /// The configuration holds a value out of range (raised by `Dashboard.init`).
        package static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// A computation behind a page failed (crowd analysis, localization listing, health source) (500).
        package static let computationFailed = Code(name: "computationFailed")
        /// The name of the code.
        package var description: String { name }
    }

    /// The kind of problem.
    package var code: Code
    /// The cause, in words, safe to show to the person who made the request.
    package var message: String
    /// The error that caused this one, if any (kept for logs, never shown).
    package var underlying: (any Error & Sendable)?

    /// Creates an error.
    package init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The HTTP status code that reports this error.
    package var statusCode: Int {
        switch code {
        case .notFound: 404
        case .invalidParameter: 400
        case .forbidden: 403
        case .tooManyRuns: 429
        case .storeUnavailable, .launcherUnavailable: 503
        default: 500
        }
    }

    /// `<code>: <message>`.
    package var description: String { "\(code): \(message)" }

    /// Errors are equal when their codes are.
    package static func == (lhs: WeheWebError, rhs: WeheWebError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
