/// The error of the `WeheTestbed` target: the throttling proxy could not be configured or started.
///
/// Failures of single relayed flows (an upstream that refuses, a peer that resets) are not thrown: they end that
/// flow only and are counted in ``ThrottlingProxyStatistics``.
public struct WeheTestbedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A configuration value is out of range or inconsistent (a negative rate, an empty pattern …).
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// A listening socket could not be opened (address in use, permission denied, unknown host).
        public static let bindFailed = Code(name: "bindFailed")
        /// A textual argument (a `host:port` pair, a hex pattern, a rate with unit) could not be parsed.
        public static let invalidArgument = Code(name: "invalidArgument")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// What is wrong, in words.
    public var message: String
    /// The configuration field or argument concerned, when there is one.
    public var field: String?
    /// The underlying error (a socket error from SwiftNIO), when there is one.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, field: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.underlying = underlying
    }

    /// One line: `field rate: must be positive`, with the underlying error appended when there is one.
    public var description: String {
        var text = field.map { "\($0): " } ?? ""
        text += message
        if let underlying { text += " (\(underlying))" }
        return text
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: WeheTestbedError, rhs: WeheTestbedError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
