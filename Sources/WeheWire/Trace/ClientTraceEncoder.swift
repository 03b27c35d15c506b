public import WeheCore

/// Writes client replay files in the published layout: the 4-element array with `", "` / `": "` separators,
/// lowercase hex payloads and the shortest round-tripping spelling of timestamps, so a file read and written again
/// has the same entries and values.
public struct ClientTraceEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes a trace to JSON text.
    public func encode(_ trace: ReplayTrace) -> String {
        var out = "[["
        out.reserveCapacity(trace.packets.reduce(64) { $0 + $1.payload.count * 2 + 160 })
        for (index, packet) in trace.packets.enumerated() {
            if index > 0 { out += ", " }
            out += "{\"c_s_pair\": "
            JSONText.appendQuoted(packet.csPair.rawValue, to: &out)
            out += ", \"payload\": \""
            out += HexCodec.encode(packet.payload)
            out += "\", \"timestamp\": "
            out += JSONText.number(packet.timestamp)
            switch packet.kind {
            case .tcp(let length, let hash):
                out += ", \"response_len\": \(length), \"response_hash\": "
                if let hash {
                    JSONText.appendQuoted(hash, to: &out)
                } else {
                    out += "null"
                }
            case .udp(let end):
                out += ", \"end\": \(end)"
            }
            out += "}"
        }
        out += "], "
        out += JSONValue.array(trace.udpClientPorts.map { .string($0) }).serialized()
        out += ", "
        out += JSONValue.array(trace.tcpCSPairs.map { .string($0) }).serialized()
        out += ", "
        JSONText.appendQuoted(trace.name, to: &out)
        out += "]"
        return out
    }
}
