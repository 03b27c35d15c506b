/// A client replay trace: what the client sends, when, and how many bytes it expects back
/// (a `<Name>_<date>.pcap_client_all.json` file, protocol.md section 1.1).
///
/// The four elements of the file map to `packets`, `udpClientPorts`, `tcpCSPairs` and `name`. A trace is TCP iff
/// `tcpCSPairs` is non-empty, as the Java client decides.
public struct ReplayTrace: Sendable, Hashable {
    /// Every client→server packet, sorted by timestamp.
    public var packets: [ReplayPacket]
    /// UDP client ports seen in the recording, as five-digit strings (element 1); empty for TCP.
    public var udpClientPorts: [String]
    /// TCP c_s_pair strings (element 2); empty for UDP.
    public var tcpCSPairs: [String]
    /// The replay name sent to the server, e.g. `Youtube-02202024` or `port_443_large` (element 3).
    public var name: String

    /// Creates a trace without validation; use `validate()` to check invariants.
    public init(packets: [ReplayPacket], udpClientPorts: [String], tcpCSPairs: [String], name: String) {
        self.packets = packets
        self.udpClientPorts = udpClientPorts
        self.tcpCSPairs = tcpCSPairs
        self.name = name
    }

    /// The transport of the replay.
    public var transport: TransportProtocol { tcpCSPairs.isEmpty ? .udp : .tcp }

    /// The distinct flows in order of first appearance.
    public var flows: [CSPair] {
        var seen = Set<CSPair>()
        var result: [CSPair] = []
        for packet in packets where seen.insert(packet.csPair).inserted {
            result.append(packet.csPair)
        }
        return result
    }

    /// Bytes the client sends in total.
    public var bytesUp: Int { packets.reduce(0) { $0 + $1.payload.count } }

    /// Bytes the server sends in total, as far as the client file knows (TCP response lengths; 0 for UDP, whose
    /// server datagrams are not in the client file).
    public var bytesDown: Int { packets.reduce(0) { $0 + $1.responseLength } }

    /// Timestamp of the last packet (0 for an empty trace).
    public var duration: Double { packets.last?.timestamp ?? 0 }

    /// Whether the name marks a port test (`port_<N>` or `port_<N>_large`), which replays without timing.
    public var isPortTest: Bool { name.hasPrefix("port_") }

    /// Checks the invariants every consumer relies on and returns every problem found (empty when valid).
    ///
    /// Checked: at least one packet; finite, non-negative, non-decreasing timestamps; packet kinds matching the
    /// transport; non-negative response lengths; response hash present iff a response is expected and 40 lowercase
    /// hex digits; every TCP flow listed in `tcpCSPairs`; every UDP client port listed in `udpClientPorts`.
    public func problems() -> [TraceProblem] {
        var found: [TraceProblem] = []
        if name.isEmpty { found.append(TraceProblem(entry: nil, field: "name", message: "replay name is empty")) }
        if packets.isEmpty { found.append(TraceProblem(entry: nil, field: "packets", message: "trace has no packets")) }
        let tcpPairs = Set(tcpCSPairs)
        let udpPorts = Set(udpClientPorts)
        var previous = 0.0
        for (index, packet) in packets.enumerated() {
            let t = packet.timestamp
            if !t.isFinite || t < 0 {
                found.append(
                    TraceProblem(entry: index, field: "timestamp", message: "timestamp \(t) is negative or not finite"))
            } else if t < previous {
                found.append(
                    TraceProblem(
                        entry: index, field: "timestamp",
                        message: "timestamp \(t) is earlier than the previous entry's \(previous)"))
            } else {
                previous = t
            }
            switch packet.kind {
            case .tcp(let length, let hash):
                if transport == .udp {
                    found.append(
                        TraceProblem(
                            entry: index, field: "response_len",
                            message: "TCP entry in a UDP replay (element 2 is empty)"))
                }
                if length < 0 {
                    found.append(
                        TraceProblem(entry: index, field: "response_len", message: "response_len \(length) is negative")
                    )
                }
                if length > 0, hash == nil {
                    found.append(
                        TraceProblem(
                            entry: index, field: "response_hash",
                            message: "response_hash is null although response_len is \(length)"))
                }
                if let hash, !(hash.utf8.count == 40 && hash.utf8.allSatisfy(Self.isLowerHex)) {
                    found.append(
                        TraceProblem(
                            entry: index, field: "response_hash",
                            message: "response_hash is not 40 lowercase hex digits"))
                }
                if !tcpPairs.contains(packet.csPair.rawValue) {
                    found.append(
                        TraceProblem(
                            entry: index, field: "c_s_pair", message: "flow \(packet.csPair) is not listed in element 2"
                        ))
                }
            case .udp:
                if transport == .tcp {
                    found.append(
                        TraceProblem(
                            entry: index, field: "response_len", message: "UDP entry (no response_len) in a TCP replay")
                    )
                }
                if !udpPorts.contains(packet.csPair.clientPortString) {
                    found.append(
                        TraceProblem(
                            entry: index, field: "c_s_pair",
                            message: "client port \(packet.csPair.clientPortString) is not listed in element 1"))
                }
            }
        }
        return found
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}

/// The transport protocol of a replay.
public enum TransportProtocol: String, Sendable, Hashable, Codable {
    /// TCP: one connection, request groups and response bursts.
    case tcp
    /// UDP: datagrams both ways.
    case udp
}

/// One problem in a trace: which entry (index in element 0, or `nil` for the file as a whole), which field, what.
public struct TraceProblem: Sendable, Hashable, CustomStringConvertible {
    /// Index of the entry in element 0, or `nil` when the problem is not about one entry.
    public var entry: Int?
    /// The JSON field (`timestamp`, `payload`, `c_s_pair`, …) or element name.
    public var field: String
    /// What is wrong.
    public var message: String

    /// Creates a problem record.
    public init(entry: Int?, field: String, message: String) {
        self.entry = entry
        self.field = field
        self.message = message
    }

    /// `entry 12, field timestamp: …`.
    public var description: String {
        if let entry { return "entry \(entry), field \(field): \(message)" }
        return "\(field): \(message)"
    }
}
