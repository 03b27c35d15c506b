public import WeheCore

/// Reads and writes our server-side trace format (`*.wehe_server.json`, documented in
/// `Docs/server-trace-format.md`): the request groups and response bursts of each TCP flow and the datagrams of each
/// UDP flow, with recorded bytes and timing where they are known.
public struct ServerTraceCodec: Sendable {
    /// The value of the `format` key.
    public static let formatName = "wehe-server-trace"
    /// The version this code writes and reads.
    public static let version = 1

    /// Creates a codec.
    public init() {}

    /// Encodes a server trace as JSON text.
    public func encode(_ trace: ServerTrace) -> String {
        var tcp: [JSONValue] = []
        for flow in trace.tcpFlows {
            let groups: [JSONValue] = flow.groups.map { group in
                var members: [(String, JSONValue)] = [
                    ("request_len", .number(Double(group.requestLength), text: String(group.requestLength))),
                    ("response_len", .number(Double(group.responseLength), text: String(group.responseLength))),
                    ("request_time", .number(group.requestTime, text: JSONText.number(group.requestTime))),
                ]
                if let segments = group.segments {
                    members.append(("segments", .array(segments.map { Self.timed($0.offset, $0.payload) })))
                }
                return .object(members)
            }
            tcp.append(.object([("c_s_pair", .string(flow.csPair.rawValue)), ("groups", .array(groups))]))
        }
        var udp: [JSONValue] = []
        for flow in trace.udpFlows {
            var members: [(String, JSONValue)] = [("c_s_pair", .string(flow.csPair.rawValue))]
            if let datagrams = flow.datagrams {
                members.append(("datagrams", .array(datagrams.map { Self.timed($0.offset, $0.payload) })))
            }
            udp.append(.object(members))
        }
        return JSONValue.object([
            ("format", .string(Self.formatName)),
            ("version", .number(Double(Self.version), text: String(Self.version))),
            ("replayName", .string(trace.name)),
            ("tcp", .array(tcp)),
            ("udp", .array(udp)),
        ]).serialized()
    }

    private static func timed(_ offset: Double, _ payload: [UInt8]) -> JSONValue {
        .array([.number(offset, text: JSONText.number(offset)), .string(HexCodec.encode(payload))])
    }

    /// Decodes a server trace, checking that recorded segments add up to each group's response length and that
    /// offsets are non-negative and non-decreasing.
    public func decode(_ bytes: [UInt8]) throws(WeheWireError) -> ServerTrace {
        let root = try JSONValue.parse(bytes)
        guard root["format"] == .string(Self.formatName) else {
            throw WeheWireError(
                .unexpectedStructure, "not a server trace: 'format' must be \"\(Self.formatName)\"", field: "format")
        }
        guard case .number(let version, _)? = root["version"], version == Double(Self.version) else {
            throw WeheWireError(
                .unexpectedStructure, "unsupported server trace version (this build reads \(Self.version))",
                field: "version")
        }
        guard case .string(let name)? = root["replayName"], !name.isEmpty else {
            throw WeheWireError(.unexpectedStructure, "'replayName' must be a non-empty string", field: "replayName")
        }
        var tcpFlows: [TCPServerFlow] = []
        for (flowIndex, flow) in try array(root["tcp"], field: "tcp").enumerated() {
            let pair = try csPair(flow, field: "tcp[\(flowIndex)].c_s_pair")
            var groups: [ResponseGroup] = []
            for (groupIndex, group) in try array(flow["groups"], field: "tcp[\(flowIndex)].groups").enumerated() {
                let where_ = "tcp[\(flowIndex)].groups[\(groupIndex)]"
                let requestLength = try integer(group["request_len"], field: where_ + ".request_len")
                let responseLength = try integer(group["response_len"], field: where_ + ".response_len")
                let requestTime = try number(group["request_time"], field: where_ + ".request_time")
                var segments: [ServerSegment]?
                if let raw = group["segments"], raw != .null {
                    let timed = try timedPayloads(raw, field: where_ + ".segments")
                    segments = timed.map { ServerSegment(offset: $0.0, payload: $0.1) }
                    let total = timed.reduce(0) { $0 + $1.1.count }
                    guard total == responseLength else {
                        throw WeheWireError(
                            .invalidValue,
                            "segments carry \(total) bytes but response_len is \(responseLength)",
                            field: where_ + ".segments"
                        )
                    }
                }
                groups.append(
                    ResponseGroup(
                        requestLength: requestLength,
                        responseLength: responseLength,
                        requestTime: requestTime,
                        segments: segments
                    )
                )
            }
            tcpFlows.append(TCPServerFlow(csPair: pair, groups: groups))
        }
        var udpFlows: [UDPServerFlow] = []
        for (flowIndex, flow) in try array(root["udp"], field: "udp").enumerated() {
            let pair = try csPair(flow, field: "udp[\(flowIndex)].c_s_pair")
            var datagrams: [ServerDatagram]?
            if let raw = flow["datagrams"], raw != .null {
                datagrams = try timedPayloads(raw, field: "udp[\(flowIndex)].datagrams").map {
                    ServerDatagram(offset: $0.0, payload: $0.1)
                }
            }
            udpFlows.append(UDPServerFlow(csPair: pair, datagrams: datagrams))
        }
        return ServerTrace(name: name, tcpFlows: tcpFlows, udpFlows: udpFlows)
    }

    private func array(_ value: JSONValue?, field: String) throws(WeheWireError) -> [JSONValue] {
        switch value {
        case nil, .null?: return []
        case .array(let values)?: return values
        case let other?:
            throw WeheWireError(.unexpectedStructure, "must be an array, found \(other.typeName)", field: field)
        }
    }

    private func csPair(_ flow: JSONValue, field: String) throws(WeheWireError) -> CSPair {
        guard case .string(let text)? = flow["c_s_pair"] else {
            throw WeheWireError(.unexpectedStructure, "missing c_s_pair string", field: field)
        }
        do {
            return try CSPair(parsing: text)
        } catch {
            throw WeheWireError(.invalidValue, error.message, field: field)
        }
    }

    private func integer(_ value: JSONValue?, field: String) throws(WeheWireError) -> Int {
        guard case .number(let number, let text)? = value, let integer = Int(text) ?? Int(exactly: number),
            integer >= 0, integer <= ClientTraceDecoder.maximumResponseLength
        else {
            throw WeheWireError(
                .invalidValue, "must be a non-negative integer of at most \(ClientTraceDecoder.maximumResponseLength)",
                field: field)
        }
        return integer
    }

    private func number(_ value: JSONValue?, field: String) throws(WeheWireError) -> Double {
        guard case .number(let number, _)? = value, number.isFinite, number >= 0 else {
            throw WeheWireError(.invalidValue, "must be a non-negative number", field: field)
        }
        return number
    }

    private func timedPayloads(_ value: JSONValue, field: String) throws(WeheWireError) -> [(Double, [UInt8])] {
        guard case .array(let items) = value else {
            throw WeheWireError(.unexpectedStructure, "must be an array of [offset, hex] pairs", field: field)
        }
        var result: [(Double, [UInt8])] = []
        var previous = 0.0
        for (index, item) in items.enumerated() {
            guard case .array(let pair) = item, pair.count == 2, case .number(let offset, _) = pair[0],
                case .string(let hex) = pair[1]
            else {
                throw WeheWireError(.unexpectedStructure, "item \(index) must be [offset, hex]", field: field)
            }
            guard offset.isFinite, offset >= previous else {
                throw WeheWireError(
                    .invalidValue, "item \(index): offset \(offset) is negative or decreases", field: field)
            }
            guard let bytes = HexCodec.decode(hex) else {
                throw WeheWireError(
                    .invalidValue, "item \(index): payload is not valid hex of even length", field: field)
            }
            previous = offset
            result.append((offset, bytes))
        }
        return result
    }
}
