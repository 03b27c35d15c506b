/// An IP-to-AS table: which autonomous system (AS) announces an address, by longest-prefix match, and the AS names.
///
/// Built from two files its user supplies (never from a third-party service): a prefix-to-AS file in the RouteViews
/// format (`prefix<TAB>length<TAB>asn`, one route a line, e.g. CAIDA's `routeviews-rv2-*.pfx2as`) and an AS-names
/// file (`asn<TAB>name`). Lookups try each prefix length present, longest first, in one hash table per length: at
/// most 33 (IPv4) or 129 (IPv6) probes, in practice about 25.
public struct ASTable: Sendable {
    /// An autonomous system: its number and, when the names file has it, its name.
    public struct Entry: Sendable, Hashable {
        /// The AS number.
        public var number: UInt32
        /// The organisation's name, `nil` when the names file does not list the number.
        public var name: String?

        /// Creates an entry.
        public init(number: UInt32, name: String?) {
            self.number = number
            self.name = name
        }
    }

    /// What loading skipped, so that an operator sees why an address finds no AS.
    public struct LoadReport: Sendable, Hashable, CustomStringConvertible {
        /// Routes kept.
        public var prefixes = 0
        /// Prefix lines that could not be read (bad address, length or AS number), skipped.
        public var badPrefixLines = 0
        /// Routes announced by several ASes (`{1,2}` sets, `1_2` multi-origin): kept with the first AS listed.
        public var multiOriginPrefixes = 0
        /// Routes dropped because the table was full (`maximumPrefixes`).
        public var droppedPrefixes = 0
        /// Names kept.
        public var names = 0
        /// Name lines that could not be read, skipped.
        public var badNameLines = 0
        /// Names dropped because the table was full (`maximumNames`).
        public var droppedNames = 0
        /// The first bad line of each file, for the operator: `file line N: why`.
        public var firstProblems: [String] = []

        /// One line for logs.
        public var description: String {
            "\(prefixes) prefixes (\(badPrefixLines) bad lines, \(multiOriginPrefixes) multi-origin, "
                + "\(droppedPrefixes) over the limit), \(names) names (\(badNameLines) bad lines, "
                + "\(droppedNames) over the limit)"
        }
    }

    /// Most routes kept (a full RouteViews table has about 1.2 million); lines beyond are counted, not stored.
    public static let defaultMaximumPrefixes = 4_000_000
    /// Most names kept (about 120 000 ASes are allocated).
    public static let defaultMaximumNames = 1_000_000
    /// Longest name kept, in characters; longer names are cut.
    public static let maximumNameLength = 120
    /// Largest file read (a full prefix table is about 25 MB).
    public static let defaultFileSizeLimit = 512 << 20

    private var v4: [[UInt32: UInt32]]
    private var v6: [[UInt128: UInt32]]
    private var v4Lengths: [Int] = []
    private var v6Lengths: [Int] = []
    private var names: [UInt32: String] = [:]
    /// What loading kept and skipped.
    public private(set) var report = LoadReport()

    /// An empty table.
    public init() {
        v4 = Array(repeating: [:], count: 33)
        v6 = Array(repeating: [:], count: 129)
    }

    /// Builds a table from the two files' bytes. Bad lines are counted in `report`, never fatal.
    public init(
        prefixes: [UInt8],
        names: [UInt8] = [],
        maximumPrefixes: Int = ASTable.defaultMaximumPrefixes,
        maximumNames: Int = ASTable.defaultMaximumNames
    ) {
        self.init()
        addPrefixes(prefixes, maximum: maximumPrefixes)
        addNames(names, maximum: maximumNames)
    }

    /// Reads both files (each size-checked before reading).
    /// - Throws: `WeheWireError` `.unreadable` or `.tooLarge` naming the file.
    public static func load(
        prefixFile: String,
        namesFile: String?,
        sizeLimit: Int = ASTable.defaultFileSizeLimit
    ) throws(WeheWireError) -> ASTable {
        let reader = ReplayFileReader(sizeLimit: sizeLimit)
        let prefixes = try reader.read(prefixFile)
        let names = try namesFile.map { path throws(WeheWireError) in try reader.read(path) } ?? []
        return ASTable(prefixes: prefixes, names: names)
    }

    /// Whether the table has no route.
    public var isEmpty: Bool { report.prefixes == 0 }

    /// The AS announcing `address` (longest matching prefix), `nil` when no route covers it or it is not an address.
    public func lookup(_ address: String) -> Entry? {
        guard let bits = IPAddressBits(address) else { return nil }
        return lookup(bits)
    }

    /// The AS announcing `address`.
    public func lookup(_ address: IPAddressBits) -> Entry? {
        var number: UInt32?
        switch address {
        case .v4(let value):
            for length in v4Lengths {
                let key = length == 0 ? 0 : value & ~UInt32(0) << (32 - length)
                if let found = v4[length][key] {
                    number = found
                    break
                }
            }
        case .v6(let value):
            for length in v6Lengths {
                let key = length == 0 ? 0 : value & ~UInt128(0) << (128 - length)
                if let found = v6[length][key] {
                    number = found
                    break
                }
            }
        }
        return number.map { Entry(number: $0, name: names[$0]) }
    }

    /// The name of AS `number`, when listed.
    public func name(of number: UInt32) -> String? { names[number] }

    private mutating func addPrefixes(_ bytes: [UInt8], maximum: Int) {
        var lineNumber = 0
        Self.forEachLine(bytes) { line in
            lineNumber += 1
            if line.isEmpty || line.first == UInt8(ascii: "#") { return }
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
            guard fields.count >= 3, let address = IPAddressBits.parse(fields[0]), let length = Self.integer(fields[1])
            else {
                return problem(prefix: true, lineNumber, "expected prefix<TAB>length<TAB>asn")
            }
            guard let (asn, several) = Self.originAS(fields[2]) else {
                return problem(prefix: true, lineNumber, "bad AS number")
            }
            guard report.prefixes < maximum else {
                report.droppedPrefixes += 1
                return
            }
            switch address {
            case .v4(let value):
                guard length <= 32, fields[0].contains(UInt8(ascii: ".")), !fields[0].contains(UInt8(ascii: ":"))
                else { return problem(prefix: true, lineNumber, "bad IPv4 prefix length") }
                let key = length == 0 ? 0 : value & ~UInt32(0) << (32 - length)
                v4[length][key] = asn
            case .v6(let value):
                guard length <= 128 else { return problem(prefix: true, lineNumber, "bad IPv6 prefix length") }
                let key = length == 0 ? 0 : value & ~UInt128(0) << (128 - length)
                v6[length][key] = asn
            }
            report.prefixes += 1
            if several { report.multiOriginPrefixes += 1 }
        }
        v4Lengths = (0...32).reversed().filter { !v4[$0].isEmpty }
        v6Lengths = (0...128).reversed().filter { !v6[$0].isEmpty }
    }

    private mutating func addNames(_ bytes: [UInt8], maximum: Int) {
        var lineNumber = 0
        Self.forEachLine(bytes) { line in
            lineNumber += 1
            if line.isEmpty || line.first == UInt8(ascii: "#") { return }
            guard let tab = line.firstIndex(of: UInt8(ascii: "\t")),
                let number = Self.asNumber(line[line.startIndex..<tab])
            else { return problem(prefix: false, lineNumber, "expected asn<TAB>name") }
            let name = Self.cleanName(line[(tab + 1)...])
            guard !name.isEmpty else { return problem(prefix: false, lineNumber, "empty name") }
            guard names.count < maximum || names[number] != nil else {
                report.droppedNames += 1
                return
            }
            if names.updateValue(name, forKey: number) == nil { report.names += 1 }
        }
    }

    private mutating func problem(prefix: Bool, _ lineNumber: Int, _ why: String) {
        if prefix {
            if report.badPrefixLines == 0 { report.firstProblems.append("prefix file line \(lineNumber): \(why)") }
            report.badPrefixLines += 1
        } else {
            if report.badNameLines == 0 { report.firstProblems.append("names file line \(lineNumber): \(why)") }
            report.badNameLines += 1
        }
    }

    /// Calls `body` with each line, without its `\n` or `\r\n`.
    private static func forEachLine(_ bytes: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) {
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            var line = bytes[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            body(line)
            start = end + 1
        }
    }

    /// A small decimal integer (a prefix length), `nil` otherwise.
    private static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 3 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// A 32-bit AS number, optionally written `AS64500`.
    private static func asNumber(_ bytes: ArraySlice<UInt8>) -> UInt32? {
        var digits = bytes
        if digits.count > 2, digits[digits.startIndex] | 0x20 == UInt8(ascii: "a"),
            digits[digits.startIndex + 1] | 0x20 == UInt8(ascii: "s")
        {
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, digits.count <= 10 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        return value <= UInt64(UInt32.max) ? UInt32(value) : nil
    }

    /// The origin field: one AS, a multi-origin `1_2`, or an AS set `{1,2}` (or a mix, `1_{2,3}`); the first AS
    /// listed, and whether there were several.
    private static func originAS(_ bytes: ArraySlice<UInt8>) -> (UInt32, Bool)? {
        let parts = bytes.split(whereSeparator: {
            $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}")
        })
        guard let first = parts.first, let number = asNumber(first) else { return nil }
        for part in parts.dropFirst() where asNumber(part) == nil { return nil }
        return (number, parts.count > 1)
    }

    /// A name as shown to people: valid UTF-8 (bad bytes replaced), control characters dropped, spaces trimmed,
    /// at most `maximumNameLength` characters.
    private static func cleanName(_ bytes: ArraySlice<UInt8>) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7f {
            kept.append(scalar)
        }
        var trimmed = Substring(String(kept))
        while trimmed.first == " " { trimmed = trimmed.dropFirst() }
        while trimmed.last == " " { trimmed = trimmed.dropLast() }
        return String(trimmed.prefix(maximumNameLength))
    }
}
