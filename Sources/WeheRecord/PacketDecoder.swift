/// A TCP or UDP packet decoded from a captured frame.
struct DecodedPacket: Sendable, Hashable {
    enum Transport: Sendable, Hashable {
        case tcp(sequence: UInt32, flags: UInt8)
        case udp
    }

    var time: Double
    /// 4 or 16 bytes.
    var source: [UInt8]
    var destination: [UInt8]
    var sourcePort: UInt16
    var destinationPort: UInt16
    var transport: Transport
    var payload: [UInt8]

    static let fin: UInt8 = 0x01
    static let syn: UInt8 = 0x02
    static let rst: UInt8 = 0x04
    static let ack: UInt8 = 0x10
}

/// Why a frame gave no TCP or UDP packet; counted in the quality report.
enum SkippedFrame: String, Error, Sendable, Hashable, CaseIterable {
    case notIP = "not IPv4 or IPv6"
    case otherTransport = "neither TCP nor UDP"
    case fragment = "IP fragment (not reassembled)"
    case cutBySnapLength = "cut by the capture's snap length"
    case malformedHeader = "malformed or truncated header"
}

/// Decodes link-layer frames down to TCP and UDP payloads: Ethernet (with VLAN tags), Linux cooked capture v1 and
/// v2, raw IP, BSD null/loopback, and Apple's PKTAP around any of these (what a Mac's `tcpdump` writes for an
/// iPhone's `rvi0` or for `-i pktap`); IPv4 (no options needed) and IPv6 (extension headers skipped).
struct PacketDecoder: Sendable {
    /// libpcap's link-type values (`DLT_*` as `pcap_datalink` returns them).
    enum LinkType {
        static let null: Int32 = 0
        static let ethernet: Int32 = 1
        static let rawLinux: Int32 = 12
        static let rawOpenBSD: Int32 = 14
        static let rawLinktype: Int32 = 101
        static let loop: Int32 = 108
        static let linuxSLL: Int32 = 113
        static let ipv4: Int32 = 228
        static let ipv6: Int32 = 229
        static let linuxSLL2: Int32 = 276
        /// Apple's PKTAP (`LINKTYPE_PKTAP`; libpcap reads it as 258 off an Apple system).
        static let pktap: Int32 = 258
    }

    /// The shortest PKTAP header (version 1: length, record type, link type, interface name, flags, family,
    /// header and trailer lengths, process, command, service class, interface type and unit, effective process and
    /// command); version 2 and later headers are longer, and their first field says by how much.
    static let shortestPKTAPHeader = 108

    let linkType: Int32

    /// Whether this link type is one we decode.
    static func supports(_ linkType: Int32) -> Bool {
        [
            LinkType.null, LinkType.ethernet, LinkType.rawLinux, LinkType.rawOpenBSD, LinkType.rawLinktype,
            LinkType.loop, LinkType.linuxSLL, LinkType.ipv4, LinkType.ipv6, LinkType.linuxSLL2, LinkType.pktap,
        ].contains(linkType)
    }

    /// Decodes one frame.
    func decode(_ frame: CapturedFrame) -> Result<DecodedPacket, SkippedFrame> {
        let bytes = frame.bytes
        guard let ipStart = ipOffset(bytes) else { return .failure(.notIP) }
        guard ipStart < bytes.count else { return .failure(.malformedHeader) }
        let version = bytes[ipStart] >> 4
        switch version {
        case 4: return decodeIPv4(bytes, at: ipStart, time: frame.time)
        case 6: return decodeIPv6(bytes, at: ipStart, time: frame.time)
        default: return .failure(.notIP)
        }
    }

    /// Where the IP header starts, or `nil` for a frame that carries no IP.
    private func ipOffset(_ bytes: [UInt8]) -> Int? {
        switch linkType {
        case LinkType.ethernet:
            var offset = 12
            while offset + 2 <= bytes.count {
                let type = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
                switch type {
                case 0x8100, 0x88a8, 0x9100: offset += 4  // VLAN tags
                case 0x0800, 0x86dd: return offset + 2
                default: return nil
                }
            }
            return nil
        case LinkType.linuxSLL:
            guard bytes.count >= 16 else { return nil }
            return isIPEtherType(bytes[14], bytes[15]) ? 16 : nil
        case LinkType.linuxSLL2:
            guard bytes.count >= 20 else { return nil }
            return isIPEtherType(bytes[0], bytes[1]) ? 20 : nil
        case LinkType.null, LinkType.loop:
            // A 4-byte address family (host or network order); the IP version nibble says which IP it is.
            return bytes.count > 4 ? 4 : nil
        case LinkType.rawLinux, LinkType.rawOpenBSD, LinkType.rawLinktype, LinkType.ipv4, LinkType.ipv6:
            return 0
        case LinkType.pktap:
            return pktapOffset(bytes)
        default:
            return nil
        }
    }

    /// Where the IP header starts behind a PKTAP header. Its fields are little-endian (every system that writes
    /// them is): the header's own length, the record type (1 for a packet; other records carry none), and the
    /// link type of the frame that follows (Apple's `DLT_*` values, which for the types read here are the ones
    /// above). A header that is shorter than the first version, runs past the frame, or wraps another PKTAP
    /// header gives no IP.
    private func pktapOffset(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= Self.shortestPKTAPHeader else { return nil }
        func littleEndian32(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
        }
        let length = Int(littleEndian32(0))
        let inner = Int32(bitPattern: littleEndian32(8))
        guard length >= Self.shortestPKTAPHeader, length < bytes.count, littleEndian32(4) == 1,
            inner != LinkType.pktap, Self.supports(inner)
        else { return nil }
        return PacketDecoder(linkType: inner).ipOffset(Array(bytes[length...])).map { length + $0 }
    }

    private func isIPEtherType(_ high: UInt8, _ low: UInt8) -> Bool {
        let type = UInt16(high) << 8 | UInt16(low)
        return type == 0x0800 || type == 0x86dd
    }

    private func decodeIPv4(_ bytes: [UInt8], at start: Int, time: Double) -> Result<DecodedPacket, SkippedFrame> {
        guard bytes.count >= start + 20 else { return .failure(.malformedHeader) }
        let headerLength = Int(bytes[start] & 0x0F) * 4
        let totalLength = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        guard headerLength >= 20, bytes.count >= start + headerLength else { return .failure(.malformedHeader) }
        let flagsAndOffset = UInt16(bytes[start + 6]) << 8 | UInt16(bytes[start + 7])
        if flagsAndOffset & 0x3FFF != 0 { return .failure(.fragment) }  // more-fragments flag or an offset
        // A sender's capture with segmentation offload may write 0 as the total length: take what was captured.
        let end: Int
        if totalLength == 0 {
            end = bytes.count
        } else {
            guard totalLength >= headerLength else { return .failure(.malformedHeader) }
            guard start + totalLength <= bytes.count else { return .failure(.cutBySnapLength) }
            end = start + totalLength
        }
        let source = Array(bytes[(start + 12)..<(start + 16)])
        let destination = Array(bytes[(start + 16)..<(start + 20)])
        return decodeTransport(
            bytes, protocolNumber: bytes[start + 9], at: start + headerLength, end: end, source: source,
            destination: destination, time: time)
    }

    private func decodeIPv6(_ bytes: [UInt8], at start: Int, time: Double) -> Result<DecodedPacket, SkippedFrame> {
        guard bytes.count >= start + 40 else { return .failure(.malformedHeader) }
        let payloadLength = Int(bytes[start + 4]) << 8 | Int(bytes[start + 5])
        let end: Int
        if payloadLength == 0 {
            end = bytes.count  // a jumbogram or an offloaded send: take what was captured
        } else {
            guard start + 40 + payloadLength <= bytes.count else { return .failure(.cutBySnapLength) }
            end = start + 40 + payloadLength
        }
        var next = bytes[start + 6]
        var offset = start + 40
        // Hop-by-hop, routing and destination options headers are skipped; a fragment header is not reassembled.
        var hops = 0
        while [0, 43, 60, 44].contains(next) {
            if next == 44 { return .failure(.fragment) }
            guard offset + 2 <= end, hops < 8 else { return .failure(.malformedHeader) }
            let length = (Int(bytes[offset + 1]) + 1) * 8
            next = bytes[offset]
            offset += length
            hops += 1
        }
        guard offset <= end else { return .failure(.malformedHeader) }
        let source = Array(bytes[(start + 8)..<(start + 24)])
        let destination = Array(bytes[(start + 24)..<(start + 40)])
        return decodeTransport(
            bytes, protocolNumber: next, at: offset, end: end, source: source, destination: destination, time: time)
    }

    private func decodeTransport(
        _ bytes: [UInt8], protocolNumber: UInt8, at start: Int, end: Int, source: [UInt8], destination: [UInt8],
        time: Double
    ) -> Result<DecodedPacket, SkippedFrame> {
        func port(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        switch protocolNumber {
        case 6:
            guard start + 20 <= end else { return .failure(.malformedHeader) }
            let dataOffset = Int(bytes[start + 12] >> 4) * 4
            guard dataOffset >= 20, start + dataOffset <= end else { return .failure(.malformedHeader) }
            let sequence =
                UInt32(bytes[start + 4]) << 24 | UInt32(bytes[start + 5]) << 16 | UInt32(bytes[start + 6]) << 8
                | UInt32(bytes[start + 7])
            return .success(
                DecodedPacket(
                    time: time, source: source, destination: destination, sourcePort: port(start),
                    destinationPort: port(start + 2), transport: .tcp(sequence: sequence, flags: bytes[start + 13]),
                    payload: Array(bytes[(start + dataOffset)..<end])))
        case 17:
            guard start + 8 <= end else { return .failure(.malformedHeader) }
            let length = Int(port(start + 4))
            // The UDP length bounds the payload (Ethernet pads short frames); 0 happens with offloaded sends.
            let payloadEnd = length >= 8 ? min(end, start + length) : end
            if length > 8, start + length > end { return .failure(.cutBySnapLength) }
            return .success(
                DecodedPacket(
                    time: time, source: source, destination: destination, sourcePort: port(start),
                    destinationPort: port(start + 2), transport: .udp, payload: Array(bytes[(start + 8)..<payloadEnd])))
        default:
            return .failure(.otherTransport)
        }
    }
}

/// IP address text and parsing.
enum IPText {
    /// Parses an IPv4 or IPv6 address into 4 or 16 bytes.
    static func parse(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var groups: [UInt16] = []
            let halves = text.split(separator: "::", omittingEmptySubsequences: false).map(String.init)
            guard halves.count <= 2 else { return nil }
            func parseGroups(_ part: String) -> [UInt16]? {
                if part.isEmpty { return [] }
                var result: [UInt16] = []
                for piece in part.split(separator: ":", omittingEmptySubsequences: false) {
                    guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                    result.append(value)
                }
                return result
            }
            guard let head = parseGroups(halves[0]) else { return nil }
            if halves.count == 2 {
                guard let tail = parseGroups(halves[1]), head.count + tail.count <= 7 else { return nil }
                groups = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
            } else {
                guard head.count == 8 else { return nil }
                groups = head
            }
            return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// Dotted quad for 4 bytes, compressed hex groups for 16.
    static func format(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        guard bytes.count == 16 else { return bytes.map { String($0, radix: 16) }.joined() }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        // The longest run of two or more zero groups becomes "::".
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            if groups[index] == 0 {
                var end = index
                while end < 8, groups[end] == 0 { end += 1 }
                if end - index > best.length { best = (index, end - index) }
                index = end
            } else {
                index += 1
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }
}
