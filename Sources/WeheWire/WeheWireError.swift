/// The error of the `WeheWire` target: a byte format could not be read or written.
///
/// Every error names where the problem is: the file (when known), the entry index inside the replay's packet list
/// (when the problem is inside one entry), the field, and the byte offset in the input.
public struct WeheWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The input is not well-formed JSON (truncated, stray bytes, bad escapes, nesting too deep).
        public static let malformedJSON = Code(name: "malformedJSON")
        /// Well-formed JSON whose shape is not the expected format (wrong element count, wrong type, missing key).
        public static let unexpectedStructure = Code(name: "unexpectedStructure")
        /// A value has the right type but an invalid content (odd-length hex, bad c_s_pair, negative length …).
        public static let invalidValue = Code(name: "invalidValue")
        /// The input exceeds a configured size limit.
        public static let tooLarge = Code(name: "tooLarge")
        /// The file could not be read.
        public static let unreadable = Code(name: "unreadable")
        /// The name of the code.
        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// What is wrong, in words.
    public var message: String
    /// The file, when reading from a file.
    public var file: String?
    /// Index of the entry in the replay's packet list (element 0), or of the app in the catalog.
    public var entry: Int?
    /// The field name (`payload`, `timestamp`, `c_s_pair`, `element 3` …).
    public var field: String?
    /// Byte offset in the input where the problem was found.
    public var offset: Int?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        file: String? = nil,
        entry: Int? = nil,
        field: String? = nil,
        offset: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.entry = entry
        self.field = field
        self.offset = offset
    }

    /// Returns a copy naming `file`.
    public func inFile(_ file: String) -> WeheWireError {
        var copy = self
        copy.file = file
        return copy
    }

    /// One line: `file: entry 12, field payload (byte 3456): odd-length hex string`.
    public var description: String {
        var location: [String] = []
        if let entry { location.append("entry \(entry)") }
        if let field { location.append("field \(field)") }
        var text = file.map { "\($0): " } ?? ""
        if !location.isEmpty { text += location.joined(separator: ", ") }
        if let offset { text += location.isEmpty ? "byte \(offset)" : " (byte \(offset))" }
        if !location.isEmpty || offset != nil { text += ": " }
        return text + message
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: WeheWireError, rhs: WeheWireError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
