public import WeheCore

/// Reads client replay files (`*.pcap_client_all.json`, protocol.md section 1.1): a JSON array of exactly four
/// elements — packets, UDP client ports, TCP c_s_pairs, replay name — with object keys in any order.
///
/// The decoder walks the bytes once and builds packets directly (no intermediate JSON tree), decodes hex payloads
/// strictly, and reports the first problem with the entry index, field and byte offset. Memory is bounded by the
/// input size limit of `ReplayFileReader` plus the decoded trace (about half the file size).
public struct ClientTraceDecoder: Sendable {
    /// Largest `response_len` accepted: 4 GiB, three orders of magnitude above the largest published response
    /// (about 2 MB). The bound keeps sums over a whole trace (`bytesDown`, the derived server trace) far from
    /// overflowing `Int`; found by fuzzing (two `Int.max` lengths trapped).
    public static let maximumResponseLength = 1 << 32

    /// Creates a decoder.
    public init() {}

    /// Decodes a client replay file from its bytes.
    /// - Throws: `WeheWireError` naming the entry, field and byte offset of the first problem.
    public func decode(_ bytes: [UInt8]) throws(WeheWireError) -> ReplayTrace {
        try bytes.withUnsafeBufferPointer { (buffer) throws(WeheWireError) -> ReplayTrace in
            var scanner = JSONScanner(buffer)
            return try decode(&scanner)
        }
    }

    private func decode(_ scanner: inout JSONScanner) throws(WeheWireError) -> ReplayTrace {
        guard try scanner.peek() == UInt8(ascii: "[") else {
            throw structure(scanner, "the top level must be an array of 4 elements", field: nil)
        }
        scanner.position += 1
        // Element 0: packets.
        guard try scanner.peek() == UInt8(ascii: "[") else {
            throw structure(scanner, "element 0 must be the array of packets", field: "element 0")
        }
        scanner.position += 1
        var packets: [ReplayPacket] = []
        var pairCache: (String, CSPair)?
        if try !scanner.consume(UInt8(ascii: "]")) {
            repeat {
                let packet = try decodePacket(&scanner, index: packets.count, pairCache: &pairCache)
                packets.append(packet)
            } while try scanner.commaOrClose(UInt8(ascii: "]"))
        }
        try elementSeparator(&scanner, after: 0)
        let udpPorts = try stringArray(&scanner, element: 1)
        try elementSeparator(&scanner, after: 1)
        let tcpPairs = try stringArray(&scanner, element: 2)
        try elementSeparator(&scanner, after: 2)
        guard try scanner.peek() == UInt8(ascii: "\"") else {
            throw structure(scanner, "element 3 must be the replay name (a string)", field: "element 3")
        }
        let name = try scanner.parseString()
        if try scanner.peek() == UInt8(ascii: ",") {
            throw structure(scanner, "the top-level array has more than 4 elements", field: nil)
        }
        try scanner.expect(UInt8(ascii: "]"), "']' closing the top-level array")
        try scanner.expectEnd()
        for (index, port) in udpPorts.enumerated() {
            guard port.utf8.count <= 5, let value = Int(port), value >= 0, value <= 65535 else {
                throw WeheWireError(
                    .invalidValue, "UDP client port '\(port.prefix(20))' is not a port number",
                    field: "element 1[\(index)]")
            }
        }
        for (index, pair) in tcpPairs.enumerated() {
            do {
                _ = try CSPair(parsing: pair)
            } catch {
                throw WeheWireError(.invalidValue, error.message, field: "element 2[\(index)]")
            }
        }
        return ReplayTrace(packets: packets, udpClientPorts: udpPorts, tcpCSPairs: tcpPairs, name: name)
    }

    private func elementSeparator(_ scanner: inout JSONScanner, after element: Int) throws(WeheWireError) {
        let next = try scanner.peek()
        if next == UInt8(ascii: ",") {
            scanner.position += 1
            return
        }
        if next == UInt8(ascii: "]") {
            throw structure(scanner, "the top-level array has \(element + 1) elements, expected 4", field: nil)
        }
        throw scanner.error("expected ',' after element \(element), found \(scanner.describe(next))")
    }

    private func stringArray(_ scanner: inout JSONScanner, element: Int) throws(WeheWireError) -> [String] {
        guard try scanner.peek() == UInt8(ascii: "[") else {
            throw structure(scanner, "element \(element) must be an array of strings", field: "element \(element)")
        }
        scanner.position += 1
        var values: [String] = []
        if try scanner.consume(UInt8(ascii: "]")) { return values }
        repeat {
            guard try scanner.peek() == UInt8(ascii: "\"") else {
                throw structure(scanner, "element \(element) must contain only strings", field: "element \(element)")
            }
            values.append(try scanner.parseString())
        } while try scanner.commaOrClose(UInt8(ascii: "]"))
        return values
    }

    private func decodePacket(
        _ scanner: inout JSONScanner,
        index: Int,
        pairCache: inout (String, CSPair)?
    ) throws(WeheWireError) -> ReplayPacket {
        guard try scanner.peek() == UInt8(ascii: "{") else {
            throw WeheWireError(
                .unexpectedStructure, "a packet must be an object", entry: index, offset: scanner.position)
        }
        scanner.position += 1
        var csPair: CSPair?
        var payload: [UInt8]?
        var timestamp: Double?
        var responseLength: Int?
        var hasResponseLength = false
        var responseHash: String?
        var end = false
        if try !scanner.consume(UInt8(ascii: "}")) {
            repeat {
                let keyOffset = scanner.position
                let key = try scanner.parseString()
                try scanner.expect(UInt8(ascii: ":"), "':'")
                let valueOffset = scanner.position
                func wrong(_ message: String) -> WeheWireError {
                    WeheWireError(.invalidValue, message, entry: index, field: key, offset: valueOffset)
                }
                switch key {
                case "c_s_pair":
                    guard try scanner.peek() == UInt8(ascii: "\"") else { throw wrong("c_s_pair must be a string") }
                    let text = try scanner.parseString()
                    if let cached = pairCache, cached.0 == text {
                        csPair = cached.1
                    } else {
                        do {
                            let parsed = try CSPair(parsing: text)
                            pairCache = (text, parsed)
                            csPair = parsed
                        } catch {
                            throw wrong(error.message)
                        }
                    }
                case "payload":
                    guard try scanner.peek() == UInt8(ascii: "\"") else { throw wrong("payload must be a hex string") }
                    payload = try scanner.withRawString { (raw) throws(WeheWireError) -> [UInt8] in
                        switch HexCodec.decode(raw) {
                        case .success(let bytes): return bytes
                        case .failure(let problem): throw wrong(problem.message)
                        }
                    }
                case "timestamp":
                    let next = try scanner.peek()
                    guard next == UInt8(ascii: "-") || (next >= 0x30 && next <= 0x39) else {
                        throw wrong("timestamp must be a number")
                    }
                    let (value, _) = try scanner.parseNumber()
                    guard value.isFinite, value >= 0 else {
                        throw wrong("timestamp \(value) is negative or not finite")
                    }
                    timestamp = value
                case "response_len":
                    hasResponseLength = true
                    let next = try scanner.peek()
                    guard next == UInt8(ascii: "-") || (next >= 0x30 && next <= 0x39) else {
                        throw wrong("response_len must be an integer")
                    }
                    guard let value = try scanner.parseInteger() else { throw wrong("response_len must be an integer") }
                    guard value >= 0 else { throw wrong("response_len \(value) is negative") }
                    guard value <= Self.maximumResponseLength else {
                        throw wrong("response_len \(value) is larger than \(Self.maximumResponseLength)")
                    }
                    responseLength = value
                case "response_hash":
                    if try scanner.parseLiteral("null") {
                        responseHash = nil
                    } else {
                        guard try scanner.peek() == UInt8(ascii: "\"") else {
                            throw wrong("response_hash must be a string or null")
                        }
                        responseHash = try scanner.parseString()
                    }
                case "end":
                    if try scanner.parseLiteral("true") {
                        end = true
                    } else if try scanner.parseLiteral("false") {
                        end = false
                    } else {
                        throw wrong("end must be true or false")
                    }
                default:
                    // Unknown keys are tolerated (future parser versions may add fields) but must be valid JSON.
                    _ = keyOffset
                    try scanner.skipValue(depth: 2)
                }
            } while try scanner.commaOrClose(UInt8(ascii: "}"))
        }
        func missing(_ field: String) -> WeheWireError {
            WeheWireError(
                .unexpectedStructure, "required key '\(field)' is missing", entry: index, field: field,
                offset: scanner.position)
        }
        guard let csPair else { throw missing("c_s_pair") }
        guard let payload else { throw missing("payload") }
        guard let timestamp else { throw missing("timestamp") }
        if hasResponseLength {
            return ReplayPacket(
                csPair: csPair,
                payload: payload,
                timestamp: timestamp,
                kind: .tcp(responseLength: responseLength ?? 0, responseHash: responseHash)
            )
        }
        return ReplayPacket(csPair: csPair, payload: payload, timestamp: timestamp, kind: .udp(end: end))
    }

    private func structure(_ scanner: JSONScanner, _ message: String, field: String?) -> WeheWireError {
        WeheWireError(.unexpectedStructure, message, field: field, offset: scanner.position)
    }
}
