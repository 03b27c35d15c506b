/// The error of the `WeheStatistics` target: input that a statistical routine cannot work with.
public struct StatisticsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A sample that must hold at least one value is empty.
        public static let emptySample = Code(name: "emptySample")
        /// A value is NaN or infinite.
        public static let nonFiniteValue = Code(name: "nonFiniteValue")
        /// Two lists that must be paired have different lengths.
        public static let lengthMismatch = Code(name: "lengthMismatch")
        /// A parameter is outside its domain (negative bandwidth, percentile above 100, zero variance, …).
        public static let invalidArgument = Code(name: "invalidArgument")
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
    public static func == (lhs: StatisticsError, rhs: StatisticsError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
