/// Where the client must send each flow's traffic (protocol.md section 5.4):
/// `{"tcp": {serverIP: {port5: [host, port]}}, "udp": {...}}` with server IPs spelled as in the c_s_pairs and
/// five-digit zero-padded port keys. `host == ""` means "the side channel's address".
public struct PortMap: Sendable, Hashable {
    /// One destination.
    public struct Endpoint: Sendable, Hashable {
        /// Host to connect to; empty means the side channel's host.
        public var host: String
        /// Port to connect to.
        public var port: Int

        /// Creates an endpoint.
        public init(host: String = "", port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// TCP: server address → five-digit port → endpoint.
    public var tcp: [String: [String: Endpoint]]
    /// UDP: server address → five-digit port → endpoint.
    public var udp: [String: [String: Endpoint]]

    /// Creates a map.
    public init(tcp: [String: [String: Endpoint]] = [:], udp: [String: [String: Endpoint]] = [:]) {
        self.tcp = tcp
        self.udp = udp
    }

    /// Looks up a flow's destination: the five-digit port first, then the port as plain digits (as iOS does).
    public func endpoint(udp isUDP: Bool, serverAddress: String, serverPort: UInt16) -> Endpoint? {
        let table = isUDP ? udp : tcp
        guard let ports = table[serverAddress] else { return nil }
        let padded = String(repeating: "0", count: max(0, 5 - String(serverPort).count)) + String(serverPort)
        return ports[padded] ?? ports[String(serverPort)]
    }

    /// The message body: keys sorted, so equal maps give equal bytes.
    public var body: String {
        func table(_ entries: [String: [String: Endpoint]]) -> JSONValue {
            .object(
                entries.keys.sorted().map { address in
                    let ports = entries[address] ?? [:]
                    return (
                        address,
                        .object(
                            ports.keys.sorted().map { key in
                                let endpoint = ports[key] ?? Endpoint(port: 0)
                                return (
                                    key,
                                    .array([
                                        .string(endpoint.host),
                                        .number(Double(endpoint.port), text: String(endpoint.port)),
                                    ])
                                )
                            }
                        )
                    )
                }
            )
        }
        return JSONValue.object([("tcp", table(tcp)), ("udp", table(udp))]).serialized()
    }

    /// Parses a port map, ignoring entries it cannot use (the reference server sends a spurious `""` entry).
    public init(parsing body: [UInt8]) throws(WeheWireError) {
        let root = try JSONValue.parse(body)
        guard case .object = root else {
            throw WeheWireError(.unexpectedStructure, "port map must be a JSON object", field: "port map")
        }
        func table(_ key: String) throws(WeheWireError) -> [String: [String: Endpoint]] {
            guard let value = root[key] else {
                throw WeheWireError(.unexpectedStructure, "port map has no '\(key)' key", field: key)
            }
            guard case .object(let addresses) = value else {
                throw WeheWireError(.unexpectedStructure, "'\(key)' must be an object", field: key)
            }
            var result: [String: [String: Endpoint]] = [:]
            for (address, ports) in addresses {
                guard case .object(let entries) = ports else { continue }
                for (port, target) in entries {
                    guard case .array(let pair) = target, pair.count == 2, case .string(let host) = pair[0],
                        case .number(let number, _) = pair[1], let value = Int(exactly: number), value >= 0,
                        value <= 65535
                    else { continue }
                    result[address, default: [:]][port] = Endpoint(host: host, port: value)
                }
            }
            return result
        }
        self.tcp = try table("tcp")
        self.udp = try table("udp")
    }
}
