import Foundation

/// Writes packet captures for tests of `wehe record`: classic pcap (microseconds) or pcapng, with Ethernet, raw IP,
/// Linux cooked (v1, v2), null/loopback or Apple PKTAP framing (around Ethernet, as a Mac's `tcpdump -i pktap`
/// writes), IPv4 or IPv6, TCP segments and UDP datagrams built byte by byte.
package struct SyntheticCapture: Sendable {
    /// Link-layer framing; the raw values are the file formats' link types.
    package enum Link: UInt16, Sendable {
        case null = 0
        case ethernet = 1
        case raw = 101
        case linuxSLL = 113
        case linuxSLL2 = 276
        case pktap = 258
    }

    /// File format.
    package enum Format: Sendable {
        case pcap
        case pcapng
    }

    /// An address and port; the address is 4 or 16 bytes.
    package struct Endpoint: Sendable, Hashable {
        package var address: [UInt8]
        package var port: UInt16

        package init(_ address: String, _ port: UInt16) {
            self.address = Self.parse(address)
            self.port = port
        }

        static func parse(_ text: String) -> [UInt8] {
            if text.contains(":") {
                var buffer = in6_addr()
                _ = inet_pton(AF_INET6, text, &buffer)
                return withUnsafeBytes(of: &buffer) { Array($0) }
            }
            return text.split(separator: ".").map { UInt8($0) ?? 0 }
        }
    }

    package static let fin: UInt8 = 0x01
    package static let syn: UInt8 = 0x02
    package static let psh: UInt8 = 0x08
    package static let ack: UInt8 = 0x10

    package var link: Link
    /// Frames in capture order: time (seconds since 1970) and link-layer bytes.
    package private(set) var frames: [(time: Double, bytes: [UInt8])] = []

    package init(link: Link) {
        self.link = link
    }

    /// Appends a TCP segment.
    package mutating func tcp(
        at time: Double, from source: Endpoint, to destination: Endpoint, sequence: UInt32, acknowledgement: UInt32 = 0,
        flags: UInt8 = SyntheticCapture.ack | SyntheticCapture.psh, payload: [UInt8] = []
    ) {
        var segment: [UInt8] = []
        segment += Self.be16(source.port) + Self.be16(destination.port)
        segment += Self.be32(sequence) + Self.be32(acknowledgement)
        segment += [0x50, flags] + Self.be16(65_535) + [0, 0, 0, 0]
        segment += payload
        append(at: time, ip(source.address, destination.address, protocolNumber: 6, segment))
    }

    /// Appends a UDP datagram.
    package mutating func udp(at time: Double, from source: Endpoint, to destination: Endpoint, payload: [UInt8]) {
        let datagram =
            Self.be16(source.port) + Self.be16(destination.port) + Self.be16(UInt16(8 + payload.count)) + [0, 0]
            + payload
        append(at: time, ip(source.address, destination.address, protocolNumber: 17, datagram))
    }

    /// Appends a frame as given (for damaged or foreign frames).
    package mutating func raw(at time: Double, _ bytes: [UInt8]) {
        frames.append((time, bytes))
    }

    private func ip(_ source: [UInt8], _ destination: [UInt8], protocolNumber: UInt8, _ body: [UInt8]) -> [UInt8] {
        if source.count == 16 {
            return [0x60, 0, 0, 0] + Self.be16(UInt16(body.count)) + [protocolNumber, 64] + source + destination + body
        }
        return [0x45, 0] + Self.be16(UInt16(20 + body.count)) + [0, 1, 0x40, 0, 64, protocolNumber, 0, 0] + source
            + destination + body
    }

    private mutating func append(at time: Double, _ packet: [UInt8]) {
        let isIPv6 = packet.first.map { $0 >> 4 == 6 } ?? false
        let etherType: [UInt8] = isIPv6 ? [0x86, 0xdd] : [0x08, 0x00]
        let frame: [UInt8]
        switch link {
        case .null:
            frame = (isIPv6 ? [30, 0, 0, 0] : [2, 0, 0, 0]) + packet
        case .ethernet:
            frame = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1] + etherType + packet
        case .raw:
            frame = packet
        case .linuxSLL:
            frame = [0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + etherType + packet
        case .linuxSLL2:
            frame = etherType + [0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + packet
        case .pktap:
            frame = Self.pktapHeader(innerLinkType: 1) + [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1] + etherType + packet
        }
        frames.append((time, frame))
    }

    /// A version-2 PKTAP header (156 bytes, little-endian): its length, record type 1 (a packet), the link type of
    /// the frame behind it, the interface name `en0`, then process and flow fields left zero but for the
    /// process name. A reader must skip it by its length field, not by the 108 bytes of version 1.
    package static func pktapHeader(innerLinkType: UInt32, length: UInt32 = 156, recordType: UInt32 = 1) -> [UInt8] {
        var header = le32(length) + le32(recordType) + le32(innerLinkType)
        header += Array("en0".utf8) + [UInt8](repeating: 0, count: 21)
        header += [UInt8](repeating: 0, count: 20)  // flags, family, header and trailer lengths, process id
        header += Array("ExampleApp".utf8) + [UInt8](repeating: 0, count: 10)
        header += [UInt8](repeating: 0, count: max(0, Int(length) - header.count))
        return header
    }

    /// The file's bytes.
    package func bytes(_ format: Format) -> [UInt8] {
        switch format {
        case .pcap:
            var out = Self.le32(0xa1b2_c3d4) + Self.le16(2) + Self.le16(4) + Self.le32(0) + Self.le32(0)
            out += Self.le32(262_144) + Self.le32(UInt32(link.rawValue))
            for frame in frames {
                let (seconds, micros) = Self.split(frame.time)
                out += Self.le32(seconds) + Self.le32(micros)
                out += Self.le32(UInt32(frame.bytes.count)) + Self.le32(UInt32(frame.bytes.count)) + frame.bytes
            }
            return out
        case .pcapng:
            var out = block(
                0x0A0D_0D0A, Self.le32(0x1A2B_3C4D) + Self.le16(1) + Self.le16(0) + [UInt8](repeating: 0xFF, count: 8))
            out += block(1, Self.le16(link.rawValue) + Self.le16(0) + Self.le32(262_144))
            for frame in frames {
                let micros = UInt64((frame.time * 1_000_000).rounded())
                var body = Self.le32(0) + Self.le32(UInt32(micros >> 32)) + Self.le32(UInt32(micros & 0xFFFF_FFFF))
                body += Self.le32(UInt32(frame.bytes.count)) + Self.le32(UInt32(frame.bytes.count)) + frame.bytes
                body += [UInt8](repeating: 0, count: (4 - frame.bytes.count % 4) % 4)
                out += block(6, body)
            }
            return out
        }
    }

    /// Writes the file.
    package func write(to path: String, format: Format) throws {
        try Data(bytes(format)).write(to: URL(fileURLWithPath: path))
    }

    private func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let length = UInt32(12 + body.count)
        return Self.le32(type) + Self.le32(length) + body + Self.le32(length)
    }

    private static func split(_ time: Double) -> (UInt32, UInt32) {
        let micros = UInt64((time * 1_000_000).rounded())
        return (UInt32(micros / 1_000_000), UInt32(micros % 1_000_000))
    }

    static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { be32(value).reversed() }
}

/// A TCP connection for `SyntheticCapture`: tracks both sequence numbers so a test writes the conversation and
/// then adds the defects (retransmissions, reordering) it wants by sequence number.
package struct SyntheticTCPConnection: Sendable {
    package let client: SyntheticCapture.Endpoint
    package let server: SyntheticCapture.Endpoint
    package var clientSequence: UInt32
    package var serverSequence: UInt32

    package init(
        client: SyntheticCapture.Endpoint, server: SyntheticCapture.Endpoint, clientISN: UInt32 = 1000,
        serverISN: UInt32 = 5000
    ) {
        self.client = client
        self.server = server
        self.clientSequence = clientISN
        self.serverSequence = serverISN
    }

    /// SYN, SYN-ACK, ACK at `time`.
    package mutating func handshake(at time: Double, into capture: inout SyntheticCapture) {
        capture.tcp(at: time, from: client, to: server, sequence: clientSequence, flags: SyntheticCapture.syn)
        capture.tcp(
            at: time + 0.001, from: server, to: client, sequence: serverSequence, acknowledgement: clientSequence &+ 1,
            flags: SyntheticCapture.syn | SyntheticCapture.ack)
        clientSequence &+= 1
        serverSequence &+= 1
        capture.tcp(
            at: time + 0.002, from: client, to: server, sequence: clientSequence, acknowledgement: serverSequence,
            flags: SyntheticCapture.ack)
    }

    /// One segment from the client; returns its sequence number.
    @discardableResult
    package mutating func clientSends(_ payload: [UInt8], at time: Double, into capture: inout SyntheticCapture)
        -> UInt32
    {
        let sequence = clientSequence
        capture.tcp(
            at: time, from: client, to: server, sequence: sequence, acknowledgement: serverSequence, payload: payload)
        clientSequence &+= UInt32(payload.count)
        return sequence
    }

    /// One segment from the server; returns its sequence number.
    @discardableResult
    package mutating func serverSends(_ payload: [UInt8], at time: Double, into capture: inout SyntheticCapture)
        -> UInt32
    {
        let sequence = serverSequence
        capture.tcp(
            at: time, from: server, to: client, sequence: sequence, acknowledgement: clientSequence, payload: payload)
        serverSequence &+= UInt32(payload.count)
        return sequence
    }
}
