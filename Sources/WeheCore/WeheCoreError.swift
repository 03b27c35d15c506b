/// The error of the `WeheCore` target: invalid domain values.
public struct WeheCoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A `c_s_pair` string could not be parsed.
        public static let invalidCSPair = Code(name: "invalidCSPair")
        /// A replay trace violates an invariant (ordering, lengths, flows).
        public static let invalidTrace = Code(name: "invalidTrace")
        /// Throughput samples are malformed.
        public static let invalidSamples = Code(name: "invalidSamples")
        /// A catalog entry is malformed.
        public static let invalidCatalog = Code(name: "invalidCatalog")
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
    public static func == (lhs: WeheCoreError, rhs: WeheCoreError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
