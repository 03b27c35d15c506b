/// The packet work of the merge-point prober (`MergePointProber`): reading the replay's outgoing
/// IPv4 TCP segments and the client's acknowledgements, building the in-flow copies, and matching ICMP answers to
/// the probes they quote. Pure functions on bytes (no sockets), so every rule is testable with fixed packets.
enum MergePointPackets {
    /// The fields of an IPv4 TCP packet the prober uses.
    struct TCPSegment: Sendable, Hashable {
        var source: [UInt8]
        var destination: [UInt8]
        var sourcePort: UInt16
        var destinationPort: UInt16
        var sequence: UInt32
        var ttl: UInt8
        var payloadLength: Int
        /// IP header length in bytes.
        var headerLength: Int
        /// TCP header length in bytes.
        var tcpHeaderLength: Int
    }

    /// What an ICMP message (as read from a raw ICMP socket: IP header first) answers.
    enum ICMPAnswer: Sendable, Hashable {
        /// Time exceeded for a quoted TCP segment, identified by its IP identification and ports.
        case tcpTimeExceeded(ipID: UInt16, sourcePort: UInt16, destinationPort: UInt16, destination: [UInt8])
        /// Time exceeded for a quoted UDP datagram.
        case udpTimeExceeded(sourcePort: UInt16, destinationPort: UInt16, destination: [UInt8])
        /// Port unreachable for a quoted UDP datagram.
        case udpPortUnreachable(sourcePort: UInt16, destinationPort: UInt16, destination: [UInt8])
    }

    /// Largest IP packet the prober sends: a copy longer than this is cut to it (a capture of outgoing packets may
    /// hold a segmentation-offload super-packet much longer than the path's MTU; the shorter copy is still a
    /// retransmission of bytes already sent, starting at the same sequence number).
    static let maximumCopyLength = 1280

    private static func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    private static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    /// Parses an IPv4 TCP packet (first fragment, complete headers); `nil` for anything else. The bytes may end
    /// before the packet's total length (a capture cut to a snap length), but not inside the headers.
    static func tcpSegment(_ packet: [UInt8]) -> TCPSegment? {
        guard packet.count >= 40, packet[0] >> 4 == 4, packet[9] == 6 else { return nil }
        let ihl = Int(packet[0] & 0x0F) * 4
        let total = Int(u16(packet, 2))
        // Fragment offset must be 0 (the TCP header is in this packet).
        guard ihl >= 20, u16(packet, 6) & 0x1FFF == 0, total >= ihl + 20, packet.count >= ihl + 20 else {
            return nil
        }
        let doff = Int(packet[ihl + 12] >> 4) * 4
        guard doff >= 20, ihl + doff <= total, ihl + doff <= packet.count else { return nil }
        return TCPSegment(
            source: Array(packet[12..<16]), destination: Array(packet[16..<20]),
            sourcePort: u16(packet, ihl), destinationPort: u16(packet, ihl + 2), sequence: u32(packet, ihl + 4),
            ttl: packet[8], payloadLength: total - ihl - doff, headerLength: ihl, tcpHeaderLength: doff)
    }

    /// The one's-complement sum of 16-bit words, folded.
    private static func sum(_ bytes: ArraySlice<UInt8>, initial: UInt32 = 0) -> UInt32 {
        var total = initial
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            total &+= UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.endIndex { total &+= UInt32(bytes[index]) << 8 }
        while total >> 16 != 0 { total = (total & 0xFFFF) + (total >> 16) }
        return total
    }

    /// The TCP checksum of an IPv4 packet's segment (pseudo-header included), computed with the checksum field as
    /// zero. A capture of outgoing packets on a device with checksum offload holds only the pseudo-header sum there,
    /// and conntrack treats a copy sent with it as invalid (the classifier would not see it as the flow's).
    static func tcpChecksum(_ packet: [UInt8]) -> UInt16 {
        let ihl = Int(packet[0] & 0x0F) * 4
        let total = Int(u16(packet, 2))
        var segment = Array(packet[ihl..<total])
        segment[16] = 0
        segment[17] = 0
        var pseudo = Array(packet[12..<20])
        pseudo += [0, 6, UInt8((total - ihl) >> 8), UInt8((total - ihl) & 0xFF)]
        let folded = sum(segment[...], initial: sum(pseudo[...]))
        return ~UInt16(folded)
    }

    /// The IPv4 header checksum (with the checksum field as zero).
    static func ipChecksum(_ packet: [UInt8]) -> UInt16 {
        let ihl = Int(packet[0] & 0x0F) * 4
        var header = Array(packet[0..<ihl])
        header[10] = 0
        header[11] = 0
        return ~UInt16(sum(header[...]))
    }

    /// A copy of `packet` (an outgoing IPv4 TCP data segment) to send again: cut to `maximumCopyLength`, with the
    /// given TTL and identification, and both checksums recomputed.
    static func copy(of packet: [UInt8], ttl: UInt8, ipID: UInt16) -> [UInt8]? {
        guard let segment = tcpSegment(packet), segment.payloadLength > 0 else { return nil }
        let total = min(Int(u16(packet, 2)), maximumCopyLength)
        guard total > segment.headerLength + segment.tcpHeaderLength, packet.count >= total else { return nil }
        var copy = Array(packet[0..<total])
        copy[2] = UInt8(total >> 8)
        copy[3] = UInt8(total & 0xFF)
        copy[4] = UInt8(ipID >> 8)
        copy[5] = UInt8(ipID & 0xFF)
        copy[8] = ttl
        let tcp = tcpChecksum(copy)
        copy[segment.headerLength + 16] = UInt8(tcp >> 8)
        copy[segment.headerLength + 17] = UInt8(tcp & 0xFF)
        let ip = ipChecksum(copy)
        copy[10] = UInt8(ip >> 8)
        copy[11] = UInt8(ip & 0xFF)
        return copy
    }

    /// The left edge of the first SACK block of a TCP segment: for the duplicate ACK that answers a full-path copy
    /// this is the D-SACK (RFC 2883) naming the duplicate's first byte. `nil` when the segment has no SACK option.
    static func firstSACKLeftEdge(_ packet: [UInt8]) -> UInt32? {
        guard let segment = tcpSegment(packet), segment.tcpHeaderLength > 20 else { return nil }
        let start = segment.headerLength + 20
        let end = segment.headerLength + segment.tcpHeaderLength
        var index = start
        while index < end {
            let kind = packet[index]
            if kind == 0 { return nil }
            if kind == 1 {
                index += 1
                continue
            }
            guard index + 1 < end else { return nil }
            let length = Int(packet[index + 1])
            guard length >= 2, index + length <= end else { return nil }
            if kind == 5, length >= 10 { return u32(packet, index + 2) }
            index += length
        }
        return nil
    }

    /// Reads an ICMP message as a raw ICMP socket returns it (IPv4 header, ICMP header, quoted packet).
    static func icmpAnswer(_ packet: [UInt8]) -> ICMPAnswer? {
        guard packet.count >= 20, packet[0] >> 4 == 4 else { return nil }
        let ihl = Int(packet[0] & 0x0F) * 4
        // ICMP header (8 bytes), then the quoted IP header and at least 8 bytes of its payload.
        guard ihl >= 20, packet.count >= ihl + 8 + 20 + 8 else { return nil }
        let type = packet[ihl]
        let code = packet[ihl + 1]
        let quoted = Array(packet[(ihl + 8)...])
        guard quoted[0] >> 4 == 4 else { return nil }
        let qihl = Int(quoted[0] & 0x0F) * 4
        guard qihl >= 20, quoted.count >= qihl + 8 else { return nil }
        let destination = Array(quoted[16..<20])
        let protocolNumber = quoted[9]
        switch (type, code, protocolNumber) {
        case (11, 0, 6):
            return .tcpTimeExceeded(
                ipID: u16(quoted, 4), sourcePort: u16(quoted, qihl), destinationPort: u16(quoted, qihl + 2),
                destination: destination)
        case (11, 0, 17):
            return .udpTimeExceeded(
                sourcePort: u16(quoted, qihl), destinationPort: u16(quoted, qihl + 2), destination: destination)
        case (3, 3, 17):
            return .udpPortUnreachable(
                sourcePort: u16(quoted, qihl), destinationPort: u16(quoted, qihl + 2), destination: destination)
        default:
            return nil
        }
    }
}
