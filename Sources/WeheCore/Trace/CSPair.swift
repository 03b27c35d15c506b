/// A client/server flow identifier as written in replay files: `<clientIP>.<clientPort>-<serverIP>.<serverPort>`
/// (protocol.md section 1.2).
///
/// IPv4 addresses appear with every octet zero-padded to three digits and ports zero-padded to five digits;
/// IPv6 addresses appear in compressed form. Parsing follows the robust rule of the Java client: the server part is
/// the text after the **last** `-`, the client part the text before the **first** `-`, and each part splits at its
/// last `.` into address and port. The original spelling is kept in `rawValue` because servers and clients look up
/// port maps by exactly that spelling.
public struct CSPair: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The text as it appears in the file.
    public let rawValue: String
    /// The client address exactly as spelled (e.g. `010.110.054.044`).
    public let clientAddress: String
    /// The client port.
    public let clientPort: UInt16
    /// The server address exactly as spelled (e.g. `018.160.041.126` or `2606:4700::6811:164b`).
    public let serverAddress: String
    /// The server port.
    public let serverPort: UInt16

    /// Parses a `c_s_pair` string.
    /// - Throws: `WeheCoreError` with code `.invalidCSPair` naming what is wrong.
    public init(parsing text: String) throws(WeheCoreError) {
        guard let firstDash = text.firstIndex(of: "-"), let lastDash = text.lastIndex(of: "-") else {
            throw WeheCoreError(.invalidCSPair, "c_s_pair '\(text.prefix(80))' has no '-' between client and server")
        }
        let clientPart = text[..<firstDash]
        let serverPart = text[text.index(after: lastDash)...]
        let (clientAddress, clientPort) = try Self.split(clientPart, side: "client", whole: text)
        let (serverAddress, serverPort) = try Self.split(serverPart, side: "server", whole: text)
        self.rawValue = text
        self.clientAddress = clientAddress
        self.clientPort = clientPort
        self.serverAddress = serverAddress
        self.serverPort = serverPort
    }

    /// Builds a pair from its parts, writing IPv4 addresses zero-padded and ports as five digits.
    public init(clientAddress: String, clientPort: UInt16, serverAddress: String, serverPort: UInt16) {
        let client = Self.canonicalAddress(clientAddress)
        let server = Self.canonicalAddress(serverAddress)
        self.clientAddress = client
        self.clientPort = clientPort
        self.serverAddress = server
        self.serverPort = serverPort
        self.rawValue = "\(client).\(Self.padPort(clientPort))-\(server).\(Self.padPort(serverPort))"
    }

    /// The client port as the five-digit string used in port maps and UDP port lists (e.g. `"14225"`, `"00443"`).
    public var clientPortString: String { Self.padPort(clientPort) }
    /// The server port as the five-digit string used in port maps (e.g. `"00443"`).
    public var serverPortString: String { Self.padPort(serverPort) }
    /// Whether the server address is an IPv6 address.
    public var isIPv6: Bool { serverAddress.contains(":") }

    /// `rawValue`.
    public var description: String { rawValue }

    /// Zero-pads a port to five digits.
    public static func padPort(_ port: UInt16) -> String {
        let digits = String(port)
        return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// Writes a dotted-quad IPv4 address with three digits per octet (other spellings are returned unchanged).
    public static func canonicalAddress(_ address: String) -> String {
        let octets = address.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) })
        else { return address }
        return octets.map { String(repeating: "0", count: 3 - $0.count) + $0 }.joined(separator: ".")
    }

    /// The address with IPv4 zero padding removed (`010.110.049.082` → `10.110.49.82`), usable for sockets.
    public static func socketAddress(_ address: String) -> String {
        let octets = address.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else {
            return address
        }
        return octets.map { String(Int($0) ?? 0) }.joined(separator: ".")
    }

    private static func split(
        _ part: Substring,
        side: String,
        whole: String
    ) throws(WeheCoreError) -> (String, UInt16) {
        guard let dot = part.lastIndex(of: ".") else {
            throw WeheCoreError(
                .invalidCSPair, "c_s_pair '\(whole.prefix(80))': \(side) part has no '.' before its port")
        }
        let address = String(part[..<dot])
        let portText = part[part.index(after: dot)...]
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit),
            let port = Int(portText), port <= Int(UInt16.max)
        else {
            throw WeheCoreError(
                .invalidCSPair,
                "c_s_pair '\(whole.prefix(80))': \(side) port '\(portText.prefix(12))' is not a port number")
        }
        guard isPlausibleAddress(address) else {
            throw WeheCoreError(
                .invalidCSPair,
                "c_s_pair '\(whole.prefix(80))': \(side) address '\(address.prefix(48))' is not an IP address")
        }
        return (address, UInt16(port))
    }

    private static func isPlausibleAddress(_ address: String) -> Bool {
        if address.contains(":") {
            // IPv6: hex groups and colons, optionally an embedded dotted IPv4 tail; at most one "::".
            guard address.count <= 45, address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return false
            }
            let groups = address.split(separator: ":", omittingEmptySubsequences: false)
            return groups.count >= 3 && groups.count <= 9 && groups.allSatisfy { $0.count <= 4 || $0.contains(".") }
        }
        let octets = address.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy {
                !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) && (Int($0) ?? 256) <= 255
            }
    }
}

extension Character {
    /// Whether this is one of the ASCII digits 0-9.
    var isASCIIDigit: Bool { isASCII && isNumber }
}
