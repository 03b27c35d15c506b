/// `wehe record`'s decoding of captured frames (compiled into the harness from Sources/WeheRecord: the link-layer,
/// IP, TCP and UDP decoder, the flow table, TCP reassembly, and the payload inspector).
///
/// Input: byte 0 picks the link type, then frames as a 2-byte big-endian length and that many bytes. The client
/// address is the source of the first decoded packet, so that flows form.
///
/// Invariants: decoding never reads past a frame (the address sanitizer checks) and gives 4- or 16-byte addresses;
/// reassembly keeps at most the bytes captured, with non-decreasing times; redaction keeps every length; the
/// server-name and record-size parsers stay within their input.
enum CaptureFramesTarget {
    static let linkTypes: [Int32] = [0, 1, 12, 14, 101, 108, 113, 228, 229, 276]

    static func check(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let decoder = PacketDecoder(linkType: linkTypes[Int(first) % linkTypes.count])
        var packets: [DecodedPacket] = []
        var offset = 1
        var time = 0.0
        while offset + 2 <= input.count {
            let length = Int(input[offset]) << 8 | Int(input[offset + 1])
            offset += 2
            let end = min(input.count, offset + length)
            let frame = CapturedFrame(time: time, bytes: Array(input[offset..<end]), wireLength: end - offset)
            offset = end
            time += 0.001
            if case .success(let packet) = decoder.decode(frame) {
                require([4, 16].contains(packet.source.count), "source address of \(packet.source.count) bytes")
                require(packet.source.count == packet.destination.count, "address families differ")
                require(packet.payload.count <= frame.bytes.count, "payload larger than the frame")
                packets.append(packet)
            }
        }
        guard let client = packets.first?.source else { return }
        var table = FlowTable(client: client, byteLimit: 1 << 20)
        for (index, packet) in packets.enumerated() {
            do {
                try table.add(packet, frame: index)
            } catch {
                return
            }
        }
        for flow in table.flows {
            for fromClient in [true, false] {
                let items = flow.items.filter { $0.fromClient == fromClient }
                let stream = ReassembledStream(
                    items: items, syn: fromClient ? flow.clientSYN : flow.serverSYN)
                let kept = stream.chunks.reduce(0) { $0 + $1.payload.count }
                require(kept <= items.reduce(0) { $0 + $1.payload.count }, "reassembly made bytes")
                require(
                    zip(stream.chunks, stream.chunks.dropFirst()).allSatisfy { $0.time <= $1.time },
                    "reassembled times decrease")
                var joined = stream.chunks.flatMap(\.payload)
                let count = joined.count
                _ = PayloadInspector.serverName(inClientHello: joined)
                _ = PayloadInspector.tlsRecordSizes(joined)
                _ = PayloadInspector.host(inHTTP: joined)
                _ = PayloadInspector.redactHTTP(&joined)
                require(joined.count == count, "redaction changed a length")
            }
        }
    }
}
