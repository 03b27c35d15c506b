import WeheAnalysis
import WeheCore
import WeheWire

/// The side channel's change spec (protocol.md 5.2 #2): `[packetNumber, action, spec]` asks the server to alter one
/// of the packets it sends in this replay; a DPI probe uses it to invert a region of a server packet (analysis.md
/// section 5.4 item 6). `[-1, null, null]` (what every normal client sends) changes nothing.
///
/// `packetNumber` is the `k` of the DPI search's `S_k`: the k-th server packet with a non-empty payload, counted
/// from 1 in trace order (see `LoadedReplay.serverPacketLengths`). Actions (regions are byte offsets into that
/// packet's payload, `[L, R)` with `0 ≤ L < R ≤ length`):
/// - `ReplaceI`, spec `[L, R]`: all 8 bits of bytes `[L, R)` are inverted;
/// - `ReplaceR`, spec `[L, R]`: bytes `[L, R)` are replaced by random bytes;
/// - `ReplaceW`, spec `[L, "text"]`: the text's UTF-8 bytes overwrite the payload from byte `L` (they must fit);
/// - `Invert`, spec `null`: every byte of the packet is inverted;
/// - `Random`, spec `null`: every byte of the packet is replaced by a random byte.
///
/// Every action keeps the packet's length, so the client's byte counts and the request/response schedule hold.
package struct ServerPacketChange: Sendable, Hashable {
    /// What happens to the packet.
    package enum Action: Sendable, Hashable {
        /// `ReplaceI [L, R]`.
        case invertRegion(Range<Int>)
        /// `ReplaceR [L, R]`.
        case randomizeRegion(Range<Int>)
        /// `ReplaceW [L, "text"]`.
        case overwrite(offset: Int, bytes: [UInt8])
        /// `Invert`.
        case invertAll
        /// `Random`.
        case randomizeAll

        /// The action's wire name.
        package var name: String {
            switch self {
            case .invertRegion: "ReplaceI"
            case .randomizeRegion: "ReplaceR"
            case .overwrite: "ReplaceW"
            case .invertAll: "Invert"
            case .randomizeAll: "Random"
            }
        }
    }

    /// 1-based number of the server packet (`S_k`).
    package var packetNumber: Int
    /// The alteration.
    package var action: Action

    /// Creates a change.
    package init(packetNumber: Int, action: Action) {
        self.packetNumber = packetNumber
        self.action = action
    }

    /// Parses a change-spec body; `nil` for the no-change spec (packet number −1, whatever follows).
    /// - Throws: `ReplayServerError` `.protocolViolation` with a sentence saying what is wrong.
    package static func parse(_ body: [UInt8]) throws(ReplayServerError) -> ServerPacketChange? {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body)
        } catch {
            throw refusal("change spec is not JSON: \(error.message)")
        }
        guard case .array(let items) = value, items.count == 3 else {
            throw refusal("change spec must be a JSON array [packetNumber, action, spec]")
        }
        guard let number = integer(items[0]) else {
            throw refusal("change spec packet number must be an integer, got \(items[0].typeName)")
        }
        if number == -1 { return nil }
        guard number >= 1 else {
            throw refusal("change spec packet number \(number) is neither -1 nor a server packet number (from 1)")
        }
        guard case .string(let name) = items[1] else {
            throw refusal("change spec action must be a string, got \(items[1].typeName)")
        }
        let spec = items[2]
        let action: Action
        switch name {
        case "ReplaceI": action = .invertRegion(try region(spec, action: name))
        case "ReplaceR": action = .randomizeRegion(try region(spec, action: name))
        case "ReplaceW":
            guard case .array(let parts) = spec, parts.count == 2, let offset = integer(parts[0]), offset >= 0,
                case .string(let text) = parts[1], !text.isEmpty
            else {
                throw refusal("ReplaceW needs the spec [offset, \"text\"] with offset ≥ 0 and a non-empty text")
            }
            action = .overwrite(offset: offset, bytes: Array(text.utf8))
        case "Invert", "Random":
            guard spec == .null else { throw refusal("\(name) takes no spec (null), got \(spec.typeName)") }
            action = name == "Invert" ? .invertAll : .randomizeAll
        default:
            throw refusal(
                "unknown change spec action '\(name.prefix(40))' (ReplaceI, ReplaceR, ReplaceW, Invert or Random)")
        }
        return ServerPacketChange(packetNumber: number, action: action)
    }

    /// Applies the change to a payload.
    /// - Throws: `ReplayServerError` `.protocolViolation` when the region does not fit the payload.
    func apply(to payload: inout [UInt8]) throws(ReplayServerError) {
        let length = payload.count
        switch action {
        case .invertRegion(let region):
            try Self.check(region, length: length, packet: packetNumber)
            do {
                try PayloadInversion.invert(&payload, region: region)
            } catch {
                throw Self.refusal("S_\(packetNumber): \(error.message)")
            }
        case .randomizeRegion(let region):
            try Self.check(region, length: length, packet: packetNumber)
            var generator = SystemRandomNumberGenerator()
            for index in region { payload[index] = generator.next() }
        case .overwrite(let offset, let bytes):
            // The end is computed without trapping: a client may send any offset up to Int.max.
            let (end, overflow) = offset.addingReportingOverflow(bytes.count)
            try Self.check(offset..<(overflow ? Int.max : end), length: length, packet: packetNumber)
            payload.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        case .invertAll:
            for index in payload.indices { payload[index] ^= 0xFF }
        case .randomizeAll:
            var generator = SystemRandomNumberGenerator()
            for index in payload.indices { payload[index] = generator.next() }
        }
    }

    private static func check(_ region: Range<Int>, length: Int, packet: Int) throws(ReplayServerError) {
        guard region.upperBound <= length else {
            throw refusal(
                "region [\(region.lowerBound),\(region.upperBound)) is outside S_\(packet), which has \(length) bytes")
        }
    }

    private static func region(_ spec: JSONValue, action: String) throws(ReplayServerError) -> Range<Int> {
        guard case .array(let bounds) = spec, bounds.count == 2, let left = integer(bounds[0]),
            let right = integer(bounds[1])
        else {
            throw refusal("\(action) needs the spec [left, right] (two integers)")
        }
        guard left >= 0, left < right else {
            throw refusal("\(action) region [\(left),\(right)) is empty or negative")
        }
        return left..<right
    }

    private static func integer(_ value: JSONValue) -> Int? {
        guard case .number(_, let text) = value else { return nil }
        return Int(text)
    }

    static func refusal(_ message: String) -> ReplayServerError {
        ReplayServerError(.protocolViolation, message)
    }
}

extension LoadedReplay {
    /// Where one server packet sits in the replay.
    private enum ServerPacketPlace {
        /// A response burst without recorded content (filler bytes), sent as one packet.
        case burst(flow: Int, group: Int)
        /// A recorded TCP segment.
        case segment(flow: Int, group: Int, index: Int)
        /// A UDP datagram of a flow's schedule (recorded, or the client's echoed).
        case datagram(flow: Int, index: Int)
    }

    /// The server packets with a non-empty payload in trace order, as the DPI search numbers them (`S_1`, `S_2`, …)
    /// and the change spec addresses them: for TCP, each recorded segment of each response burst, or the whole burst
    /// when the trace has no recorded content (the server then sends zero filler bytes); for UDP, each datagram the
    /// server sends on each flow. Flows in trace order.
    private var serverPackets: [(place: ServerPacketPlace, length: Int)] {
        var packets: [(place: ServerPacketPlace, length: Int)] = []
        for (flowIndex, flow) in server.tcpFlows.enumerated() {
            for (groupIndex, group) in flow.groups.enumerated() where group.responseLength > 0 {
                if let segments = group.segments {
                    for (index, segment) in segments.enumerated() where !segment.payload.isEmpty {
                        packets.append(
                            (.segment(flow: flowIndex, group: groupIndex, index: index), segment.payload.count))
                    }
                } else {
                    packets.append((.burst(flow: flowIndex, group: groupIndex), group.responseLength))
                }
            }
        }
        for (flowIndex, flow) in server.udpFlows.enumerated() {
            for (index, datagram) in udpSchedule(for: flow).enumerated() where !datagram.payload.isEmpty {
                packets.append((.datagram(flow: flowIndex, index: index), datagram.payload.count))
            }
        }
        return packets
    }

    /// Payload lengths of the server packets `S_1, S_2, …` (index 0 is `S_1`).
    package var serverPacketLengths: [Int] { serverPackets.map(\.length) }

    /// The server packets `S_1, S_2, …` with their payloads (zero filler for bursts without recorded content) and
    /// the trace time they follow: a burst's request time (plus the segment's offset), a UDP datagram's flow start
    /// (its first client datagram) plus its offset. For the DPI search's packet list.
    package var serverPacketContents: [(payload: [UInt8], time: Double)] {
        serverPackets.map { entry in
            switch entry.place {
            case .burst(let flow, let group):
                let group = server.tcpFlows[flow].groups[group]
                return ([UInt8](repeating: 0, count: group.responseLength), group.requestTime)
            case .segment(let flow, let group, let index):
                let group = server.tcpFlows[flow].groups[group]
                let segment = group.segments?[index]
                return (segment?.payload ?? [], group.requestTime + (segment?.offset ?? 0))
            case .datagram(let flow, let index):
                let udpFlow = server.udpFlows[flow]
                let start = client.packets.first { $0.csPair == udpFlow.csPair }?.timestamp ?? 0
                let datagram = udpSchedule(for: udpFlow)[index]
                return (datagram.payload, start + datagram.offset)
            }
        }
    }

    /// This replay with `change` applied to the server packet it names.
    /// - Throws: `ReplayServerError` `.protocolViolation` when the packet does not exist or the region does not fit.
    package func applying(_ change: ServerPacketChange) throws(ReplayServerError) -> LoadedReplay {
        let packets = serverPackets
        guard change.packetNumber >= 1, change.packetNumber <= packets.count else {
            throw ServerPacketChange.refusal(
                "change spec packet \(change.packetNumber) does not exist: \(name) has \(packets.count) server packets")
        }
        var changed = self
        switch packets[change.packetNumber - 1].place {
        case .burst(let flow, let group):
            var payload = [UInt8](repeating: 0, count: server.tcpFlows[flow].groups[group].responseLength)
            try change.apply(to: &payload)
            changed.server.tcpFlows[flow].groups[group].segments = [ServerSegment(offset: 0, payload: payload)]
        case .segment(let flow, let group, let index):
            guard var segments = server.tcpFlows[flow].groups[group].segments else { return self }
            try change.apply(to: &segments[index].payload)
            changed.server.tcpFlows[flow].groups[group].segments = segments
        case .datagram(let flow, let index):
            var schedule = udpSchedule(for: server.udpFlows[flow])
            try change.apply(to: &schedule[index].payload)
            changed.server.udpFlows[flow].datagrams = schedule
        }
        return changed
    }
}
