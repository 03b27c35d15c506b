import WeheWire

/// The IP-to-AS table's files (`ASTable`: RouteViews prefix-to-AS lines and `asn<TAB>name` lines) and the address
/// parser under it (`IPAddressBits`).
///
/// Input: the whole input is read once as a prefix file and once as a names file; each line's first field is also
/// parsed as an address.
///
/// Invariants: every non-empty, non-comment prefix line is counted exactly once (kept, bad or over the limit), and
/// never more names than name lines are kept; a route that was kept covers its own address (a lookup of it finds an
/// AS); an address that parses prints back (dotted quad, or eight hex groups) to text that parses to the same value.
enum ASTableTarget {
    static func check(_ input: [UInt8]) {
        let table = ASTable(prefixes: input, names: input, maximumPrefixes: 64, maximumNames: 64)
        let lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        let counted = lines.filter { !$0.isEmpty && $0.first != UInt8(ascii: "#") }.count
        let report = table.report
        require(
            report.prefixes + report.badPrefixLines + report.droppedPrefixes == counted,
            "\(counted) prefix lines, counted \(report.prefixes) + \(report.badPrefixLines) + \(report.droppedPrefixes)"
        )
        require(report.names + report.badNameLines + report.droppedNames <= counted, "more names than lines")
        require(report.prefixes <= 64 && report.names <= 64, "the limits were passed")
        for line in lines {
            let field = line.prefix { $0 != UInt8(ascii: "\t") }
            guard let bits = IPAddressBits(String(decoding: field, as: UTF8.self)) else { continue }
            roundTrip(bits)
        }
        var kept = 0
        for line in lines where !line.isEmpty && line.first != UInt8(ascii: "#") {
            // Replays the loader on this line alone: when it keeps the route, the route covers its own address.
            let single = ASTable(prefixes: Array(line))
            guard single.report.prefixes == 1 else { continue }
            kept += 1
            let field = line.prefix { $0 != UInt8(ascii: "\t") }
            let address = String(decoding: field, as: UTF8.self)
            require(single.lookup(address) != nil, "a kept route does not cover its own address \(address)")
            if kept >= 8 { break }
        }
    }

    static func roundTrip(_ bits: IPAddressBits) {
        let text: String
        switch bits {
        case .v4(let value):
            text = "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
        case .v6(let value):
            text = (0..<8).reversed().map { String(UInt16(truncatingIfNeeded: value >> (16 * $0)), radix: 16) }
                .joined(separator: ":")
        }
        require(IPAddressBits(text) == bits, "\(bits) printed as \(text) parses differently")
    }
}
