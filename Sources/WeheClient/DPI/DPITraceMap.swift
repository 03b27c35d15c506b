public import WeheAnalysis
public import WeheCore

/// The packets of a replay trace as the DPI search names them (analysis.md section 5.3), and how a probe becomes a
/// replay: bytes `[L, R)` of a client packet `C_k` are inverted by the client before it sends them; a server packet
/// `S_k` is inverted by the server, asked through the side channel's change spec `[k, "ReplaceI", [L, R]]`
/// (analysis.md section 5.4 item 6).
///
/// Numbering: `C_k` is the k-th client packet with a non-empty payload, in trace order. `S_k` is the k-th server
/// response with a non-empty payload as our server numbers them when the trace has no recorded server content (the
/// published traces have none): for TCP one packet per response burst (`responseLength` bytes), in trace order. For
/// the client-driven methods the packet list is the trace order of both sides (each client packet followed by its
/// response); UDP server datagrams are not listed (the client does not know them), so UDP searches probe client
/// packets only.
public struct DPITraceMap: Sendable {
    /// The payload-carrying packets in trace order.
    public let packets: [DPIPacket]
    /// Index in `trace.packets` of `C_1`, `C_2`, ….
    private let clientIndices: [Int]
    /// The trace.
    public let trace: ReplayTrace

    /// Numbers the packets of `trace`.
    public init(trace: ReplayTrace) {
        var packets: [DPIPacket] = []
        var clientIndices: [Int] = []
        var serverCount = 0
        for (index, packet) in trace.packets.enumerated() {
            if !packet.payload.isEmpty {
                clientIndices.append(index)
                packets.append(
                    DPIPacket(id: DPIPacketID(side: .client, number: clientIndices.count), length: packet.payload.count)
                )
            }
            if packet.responseLength > 0 {
                serverCount += 1
                packets.append(
                    DPIPacket(id: DPIPacketID(side: .server, number: serverCount), length: packet.responseLength))
            }
        }
        self.packets = packets
        self.clientIndices = clientIndices
        self.trace = trace
    }

    /// The recorded payload of a client packet, `nil` for server packets and unknown numbers.
    public func payload(of packet: DPIPacketID) -> [UInt8]? {
        guard packet.side == .client, packet.number >= 1, packet.number <= clientIndices.count else { return nil }
        return trace.packets[clientIndices[packet.number - 1]].payload
    }

    /// The replay of a probe: the trace to send and the change spec for the server.
    /// - Parameters:
    ///   - probe: the packet and region to invert.
    ///   - mask: further regions of the same packet to keep inverted (the binary method's cumulative mask; the
    ///     change spec carries one region, so a server packet's mask is not applied).
    /// - Throws: `ReplayClientError` `.invalidInput` for a packet the trace lacks or a region outside it.
    public func probeReplay(_ probe: DPIProbe, mask: [Range<Int>] = []) throws(ReplayClientError) -> (
        trace: ReplayTrace, changeSpec: String
    ) {
        switch probe.packet.side {
        case .client:
            guard probe.packet.number >= 1, probe.packet.number <= clientIndices.count else {
                throw ReplayClientError(
                    .invalidInput,
                    "\(probe.packet) does not exist: \(trace.name) has \(clientIndices.count) client packets")
            }
            var changed = trace
            let index = clientIndices[probe.packet.number - 1]
            do {
                for region in [probe.region] + mask {
                    try PayloadInversion.invert(&changed.packets[index].payload, region: region)
                }
            } catch {
                throw ReplayClientError(.invalidInput, "\(probe): \(error.message)")
            }
            return (changed, Self.noChange)
        case .server:
            guard probe.region.lowerBound >= 0, !probe.region.isEmpty else {
                throw ReplayClientError(.invalidInput, "\(probe): the region is empty or negative")
            }
            return (trace, Self.changeSpec(for: probe))
        }
    }

    /// `[k, "ReplaceI", [L, R]]` for a server packet's probe.
    public static func changeSpec(for probe: DPIProbe) -> String {
        "[\(probe.packet.number), \"ReplaceI\", [\(probe.region.lowerBound), \(probe.region.upperBound)]]"
    }

    /// The change spec of a replay that changes nothing.
    public static let noChange = "[-1, null, null]"
}
