/// One client→server packet of a replay trace (an entry of element 0 of a `*.pcap_client_all.json` file,
/// protocol.md section 1.1).
public struct ReplayPacket: Sendable, Hashable {
    /// What is transport-specific about a packet.
    public enum Kind: Sendable, Hashable {
        /// A TCP payload after which the server sends `responseLength` bytes (0 = no response expected).
        /// `responseHash` is the SHA-1 (lowercase hex) of those bytes, informational, `nil` iff no response.
        case tcp(responseLength: Int, responseHash: String?)
        /// A UDP datagram. `end` is always `false` in published files and ignored by clients.
        case udp(end: Bool)
    }

    /// The flow this payload belongs to.
    public var csPair: CSPair
    /// The bytes the client writes (may be empty for UDP keep-alives).
    public var payload: [UInt8]
    /// Seconds since the first frame of the original capture; the client sends no earlier than start + timestamp.
    public var timestamp: Double
    /// TCP or UDP details.
    public var kind: Kind

    /// Creates a packet.
    public init(csPair: CSPair, payload: [UInt8], timestamp: Double, kind: Kind) {
        self.csPair = csPair
        self.payload = payload
        self.timestamp = timestamp
        self.kind = kind
    }

    /// The response length for TCP packets, 0 for UDP.
    public var responseLength: Int {
        if case .tcp(let length, _) = kind { return length }
        return 0
    }

    /// Whether this is a TCP packet.
    public var isTCP: Bool {
        if case .tcp = kind { return true }
        return false
    }
}
