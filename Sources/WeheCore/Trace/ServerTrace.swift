/// What the server side of a replay does: for TCP, the request groups it reads and the response bursts it sends;
/// for UDP, the datagrams it streams back (protocol.md sections 1.5, 6.2, 7.2).
///
/// Content is optional: a trace derived from the client file alone knows only byte counts (the server then sends
/// filler bytes of the recorded length, and echoes UDP datagrams with the client's timing); a trace converted from a
/// server recording carries the recorded bytes and their timing. See `Docs/server-trace-format.md`.
public struct ServerTrace: Sendable, Hashable {
    /// The replay name (element 3 of the client file).
    public var name: String
    /// TCP flows (one in every published trace).
    public var tcpFlows: [TCPServerFlow]
    /// UDP flows (one in every published trace).
    public var udpFlows: [UDPServerFlow]

    /// Creates a server trace.
    public init(name: String, tcpFlows: [TCPServerFlow], udpFlows: [UDPServerFlow]) {
        self.name = name
        self.tcpFlows = tcpFlows
        self.udpFlows = udpFlows
    }

    /// Derives the server side from a client trace (protocol.md section 1.5): for each TCP flow, walk the packets in
    /// order accumulating payload bytes; every packet with `response_len > 0` closes a group
    /// `(requestLength = accumulated bytes, responseLength)`; bytes left at the end form a last group with response
    /// length 0. UDP flows get no recorded content (`datagrams == nil`).
    public init(derivingFrom trace: ReplayTrace) {
        var tcp: [CSPair: (groups: [ResponseGroup], pending: Int, lastTime: Double)] = [:]
        var tcpOrder: [CSPair] = []
        var udpOrder: [CSPair] = []
        var udpSeen = Set<CSPair>()
        for packet in trace.packets {
            switch packet.kind {
            case .tcp(let responseLength, _):
                if tcp[packet.csPair] == nil {
                    tcp[packet.csPair] = ([], 0, 0)
                    tcpOrder.append(packet.csPair)
                }
                tcp[packet.csPair]?.pending += packet.payload.count
                tcp[packet.csPair]?.lastTime = packet.timestamp
                if responseLength > 0, let state = tcp[packet.csPair] {
                    let group = ResponseGroup(
                        requestLength: state.pending,
                        responseLength: responseLength,
                        requestTime: packet.timestamp,
                        segments: nil
                    )
                    tcp[packet.csPair] = (state.groups + [group], 0, packet.timestamp)
                }
            case .udp:
                if udpSeen.insert(packet.csPair).inserted { udpOrder.append(packet.csPair) }
            }
        }
        self.name = trace.name
        self.tcpFlows = tcpOrder.map { pair in
            let state = tcp[pair] ?? ([], 0, 0)
            var groups = state.groups
            if state.pending > 0 {
                groups.append(
                    ResponseGroup(
                        requestLength: state.pending, responseLength: 0, requestTime: state.lastTime, segments: nil)
                )
            }
            return TCPServerFlow(csPair: pair, groups: groups)
        }
        self.udpFlows = udpOrder.map { UDPServerFlow(csPair: $0, datagrams: nil) }
    }
}

/// The server side of one TCP flow.
public struct TCPServerFlow: Sendable, Hashable {
    /// The flow.
    public var csPair: CSPair
    /// Request groups in order.
    public var groups: [ResponseGroup]

    /// Creates a flow.
    public init(csPair: CSPair, groups: [ResponseGroup]) {
        self.csPair = csPair
        self.groups = groups
    }

    /// Total bytes the server sends on this flow.
    public var responseBytes: Int { groups.reduce(0) { $0 + $1.responseLength } }
}

/// One request group and the response burst that follows it.
public struct ResponseGroup: Sendable, Hashable {
    /// Bytes the client sends (all consecutive payloads) before the server answers.
    public var requestLength: Int
    /// Bytes the server answers with (0 for a final group that absorbs trailing client bytes).
    public var responseLength: Int
    /// Timestamp (client-file time) of the packet that completes the request, used for pacing diagnostics.
    public var requestTime: Double
    /// Recorded response segments, when known; their payload lengths add up to `responseLength`.
    public var segments: [ServerSegment]?

    /// Creates a group.
    public init(requestLength: Int, responseLength: Int, requestTime: Double, segments: [ServerSegment]?) {
        self.requestLength = requestLength
        self.responseLength = responseLength
        self.requestTime = requestTime
        self.segments = segments
    }
}

/// One recorded server segment of a response burst.
public struct ServerSegment: Sendable, Hashable {
    /// Seconds after the first segment of the burst (the first is 0).
    public var offset: Double
    /// The bytes.
    public var payload: [UInt8]

    /// Creates a segment.
    public init(offset: Double, payload: [UInt8]) {
        self.offset = offset
        self.payload = payload
    }
}

/// The server side of one UDP flow.
public struct UDPServerFlow: Sendable, Hashable {
    /// The flow as recorded.
    public var csPair: CSPair
    /// Recorded server datagrams with timestamps relative to the first server datagram; `nil` when unknown (the
    /// server then echoes the client's datagrams with the client's timing).
    public var datagrams: [ServerDatagram]?

    /// Creates a flow.
    public init(csPair: CSPair, datagrams: [ServerDatagram]?) {
        self.csPair = csPair
        self.datagrams = datagrams
    }
}

/// One recorded server→client datagram.
public struct ServerDatagram: Sendable, Hashable {
    /// Seconds after the first server datagram of the flow.
    public var offset: Double
    /// The bytes (may be empty).
    public var payload: [UInt8]

    /// Creates a datagram.
    public init(offset: Double, payload: [UInt8]) {
        self.offset = offset
        self.payload = payload
    }
}
