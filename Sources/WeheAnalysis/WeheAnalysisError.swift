/// The error of the `WeheAnalysis` target: input the analysis cannot work with, or a misuse of a state machine.
///
/// Conditions that the reference analysis turns into a failure but that we can answer meaningfully (a replay with no
/// positive throughput sample, too few loss intervals) are *not* errors: they produce an inconclusive result with a
/// note. Errors are reserved for malformed input (not a number, negative throughput, mismatched lengths, a file that
/// is not a sample list) and for protocol misuse (answering a DPI probe that was never asked).
public struct WeheAnalysisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A throughput or loss sample is not a finite number, or is negative.
        public static let invalidSample = Code(name: "invalidSample")
        /// Two lists that must have equal lengths do not.
        public static let mismatchedLengths = Code(name: "mismatchedLengths")
        /// Timestamps are not finite or decrease.
        public static let invalidTimes = Code(name: "invalidTimes")
        /// A configuration value is out of its valid range.
        public static let invalidConfiguration = Code(name: "invalidConfiguration")
        /// A statistics routine rejected its input (the underlying message is kept).
        public static let statisticsFailed = Code(name: "statisticsFailed")
        /// A sample file could not be parsed.
        public static let malformedSampleFile = Code(name: "malformedSampleFile")
        /// A sample file could not be read.
        public static let unreadableFile = Code(name: "unreadableFile")
        /// A DPI search was given an answer for a probe it did not ask, or was driven after it finished.
        public static let dpiProtocolViolation = Code(name: "dpiProtocolViolation")
        /// A byte region lies outside the payload it refers to, or a packet description is invalid.
        public static let invalidRegion = Code(name: "invalidRegion")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// A human-readable explanation naming the offending value.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message`.
    public var description: String { message }

    /// Errors are equal when their codes are.
    public static func == (lhs: WeheAnalysisError, rhs: WeheAnalysisError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
