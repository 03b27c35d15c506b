/// The flows of one client in a capture: TCP connections (by 4-tuple, a new SYN after data starts a new one) and
/// UDP conversations, in order of first appearance, with their packets as captured.
struct FlowTable {
    /// One captured TCP segment with payload, or a UDP datagram.
    struct Item: Sendable, Hashable {
        var time: Double
        /// Position in the capture (ties in time keep capture order).
        var frame: Int
        var fromClient: Bool
        var sequence: UInt32
        var payload: [UInt8]
    }

    /// A flow as captured, before reassembly.
    struct Flow {
        var number: Int
        var isTCP: Bool
        var clientAddress: [UInt8]
        var clientPort: UInt16
        var serverAddress: [UInt8]
        var serverPort: UInt16
        var firstTime: Double
        var items: [Item] = []
        /// Initial sequence numbers from the SYNs, when captured.
        var clientSYN: UInt32?
        var serverSYN: UInt32?
        var sawPayload = false
    }

    private struct Key: Hashable {
        var isTCP: Bool
        var clientAddress: [UInt8]
        var clientPort: UInt16
        var serverAddress: [UInt8]
        var serverPort: UInt16
    }

    let client: [UInt8]
    private(set) var flows: [Flow] = []
    private var open: [Key: Int] = [:]
    /// Frames of other hosts (neither end is the client).
    private(set) var otherHosts = 0
    /// Payload bytes held, bounded by `byteLimit`.
    private(set) var payloadBytes = 0
    let byteLimit: Int

    init(client: [UInt8], byteLimit: Int) {
        self.client = client
        self.byteLimit = byteLimit
    }

    /// Files one decoded packet.
    /// - Throws: `.unusable` past the payload byte limit.
    mutating func add(_ packet: DecodedPacket, frame: Int) throws(WeheRecordError) {
        let sourceIsClient = packet.source == client
        let destinationIsClient = packet.destination == client
        guard sourceIsClient || destinationIsClient else {
            otherHosts += 1
            return
        }
        var fromClient = sourceIsClient
        var sequence: UInt32 = 0
        var flags: UInt8 = 0
        let isTCP: Bool
        switch packet.transport {
        case .tcp(let seq, let tcpFlags):
            isTCP = true
            sequence = seq
            flags = tcpFlags
        case .udp:
            isTCP = false
        }
        if sourceIsClient && destinationIsClient {
            // Both ends on the client's address (loopback): the SYN's sender is the client; else an existing flow
            // decides; else, the first sender of a datagram or the higher port.
            let forward = Key(
                isTCP: isTCP, clientAddress: client, clientPort: packet.sourcePort, serverAddress: client,
                serverPort: packet.destinationPort)
            let backward = Key(
                isTCP: isTCP, clientAddress: client, clientPort: packet.destinationPort, serverAddress: client,
                serverPort: packet.sourcePort)
            if isTCP, flags & DecodedPacket.syn != 0 {
                fromClient = flags & DecodedPacket.ack == 0
            } else if open[forward] != nil {
                fromClient = true
            } else if open[backward] != nil {
                fromClient = false
            } else {
                fromClient = isTCP ? packet.sourcePort > packet.destinationPort : true
            }
        }
        let key =
            fromClient
            ? Key(
                isTCP: isTCP, clientAddress: client, clientPort: packet.sourcePort, serverAddress: packet.destination,
                serverPort: packet.destinationPort)
            : Key(
                isTCP: isTCP, clientAddress: client, clientPort: packet.destinationPort, serverAddress: packet.source,
                serverPort: packet.sourcePort)
        let isClientSYN = isTCP && fromClient && flags & DecodedPacket.syn != 0 && flags & DecodedPacket.ack == 0
        var index = open[key]
        if let existing = index, isClientSYN, flows[existing].sawPayload {
            index = nil  // the port was reused for a new connection
            _ = existing
        }
        if index == nil {
            flows.append(
                Flow(
                    number: flows.count + 1, isTCP: isTCP, clientAddress: client, clientPort: key.clientPort,
                    serverAddress: key.serverAddress, serverPort: key.serverPort, firstTime: packet.time))
            index = flows.count - 1
            open[key] = index
        }
        guard let index else { return }
        if isTCP, flags & DecodedPacket.syn != 0 {
            if fromClient { flows[index].clientSYN = sequence } else { flows[index].serverSYN = sequence }
        }
        guard !packet.payload.isEmpty || !isTCP else { return }
        payloadBytes += packet.payload.count
        if payloadBytes > byteLimit {
            throw WeheRecordError(
                .unusable,
                "the client's flows in this capture hold more than \(byteLimit / 1_048_576) MiB of payload: cut the "
                    + "capture to the app's session (or choose flows with --port or --server-name)")
        }
        flows[index].sawPayload = true
        flows[index].items.append(
            Item(time: packet.time, frame: frame, fromClient: fromClient, sequence: sequence, payload: packet.payload))
    }
}

/// One direction of a TCP connection put back in order.
struct ReassembledStream: Sendable, Hashable {
    /// Contiguous pieces in stream order; times non-decreasing.
    struct Chunk: Sendable, Hashable {
        var time: Double
        var frame: Int
        var payload: [UInt8]
    }

    var chunks: [Chunk] = []
    /// Segments whose bytes were all seen before (retransmissions, duplicates), dropped.
    var retransmissions = 0
    /// Segments that overlapped bytes seen before and kept only their new bytes.
    var overlapsTrimmed = 0
    /// Segments that arrived before a segment earlier in the stream and were put back in place.
    var reordered = 0
    /// Bytes missing from the capture (holes in the sequence space).
    var missingBytes = 0

    /// Reassembles the items of one direction (`items` in capture order), starting at `syn + 1` when the SYN was
    /// captured, else at the lowest sequence number seen.
    init(items: [FlowTable.Item], syn: UInt32?) {
        guard !items.isEmpty else { return }
        // Unwrap 32-bit sequence numbers into positions relative to the first item, step by step (a stream may pass
        // 2^32 bytes or wrap around zero).
        var positions: [Int] = []
        positions.reserveCapacity(items.count)
        var previousRaw = items[0].sequence
        var previous = 0
        for item in items {
            let step = Int(Int32(bitPattern: item.sequence &- previousRaw))
            previous += step
            previousRaw = item.sequence
            positions.append(previous)
        }
        var start = positions.min() ?? 0
        if let syn {
            let synPosition = Int(Int32(bitPattern: syn &- items[0].sequence))
            if synPosition + 1 <= start { start = synPosition + 1 }
        }
        let order = items.indices.sorted { a, b in
            positions[a] != positions[b] ? positions[a] < positions[b] : items[a].frame < items[b].frame
        }
        var next = start
        var latestFrame = -1
        var lastTime = -Double.infinity
        for index in order {
            let item = items[index]
            let position = positions[index]
            let end = position + item.payload.count
            if end <= next {
                retransmissions += 1
                continue
            }
            var payload = item.payload
            if position < next {
                payload = Array(payload[(next - position)...])
                overlapsTrimmed += 1
            } else if position > next {
                missingBytes += position - next
            }
            if item.frame < latestFrame { reordered += 1 }
            latestFrame = max(latestFrame, item.frame)
            lastTime = max(lastTime, item.time)
            chunks.append(Chunk(time: lastTime, frame: max(item.frame, latestFrame), payload: payload))
            next = end
        }
    }
}
