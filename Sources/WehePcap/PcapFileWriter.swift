/// The classic pcap file format (microsecond timestamps, little-endian), as bytes: the file header once, then one
/// record per frame. Pure: the caller decides where the bytes go and how many.
package enum PcapFileFormat {
    /// The 24-byte file header for `linkType` (a `DLT_*` value) and the snap length frames were cut at.
    package static func fileHeader(linkType: Int32, snapLength: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(UInt32(0xA1B2_C3D4), to: &bytes)
        append(UInt16(2), to: &bytes)
        append(UInt16(4), to: &bytes)
        append(UInt32(0), to: &bytes)  // this zone
        append(UInt32(0), to: &bytes)  // sigfigs
        append(UInt32(bitPattern: snapLength), to: &bytes)
        append(UInt32(bitPattern: linkType), to: &bytes)
        return bytes
    }

    /// One record: a 16-byte header (time, captured and wire lengths) and the captured bytes.
    package static func record(_ frame: PcapFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16 + frame.bytes.count)
        let seconds = frame.time.rounded(.down)
        append(UInt32(truncatingIfNeeded: Int64(seconds)), to: &bytes)
        append(UInt32(min(999_999, max(0, Int64(((frame.time - seconds) * 1_000_000).rounded())))), to: &bytes)
        append(UInt32(truncatingIfNeeded: frame.bytes.count), to: &bytes)
        append(UInt32(truncatingIfNeeded: frame.wireLength), to: &bytes)
        bytes += frame.bytes
        return bytes
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}

/// The transport ports of a captured frame, read from its link-layer, IPv4 or IPv6 and TCP or UDP headers; enough
/// to tell one connection's frames from another's of the same client (no options or extension headers walked).
package enum PcapFramePorts {
    /// The protocol number (6 TCP, 17 UDP) and the source and destination ports; `nil` when the frame is not a
    /// TCP or UDP packet over IPv4 or IPv6 that this reader understands.
    package static func ports(_ bytes: [UInt8], linkType: Int32) -> (protocol: UInt8, source: Int, destination: Int)? {
        let network: Int
        switch linkType {
        case 1:  // Ethernet; one 802.1Q tag is skipped.
            guard bytes.count >= 14 else { return nil }
            network = bytes[12] == 0x81 && bytes[13] == 0x00 ? 18 : 14
        case 113:  // Linux cooked capture (SLL).
            network = 16
        case 276:  // Linux cooked capture v2 (SLL2).
            network = 20
        case 0, 108:  // BSD loopback: a 4-byte family.
            network = 4
        case 12, 101:  // Raw IP.
            network = 0
        default:
            return nil
        }
        guard bytes.count > network else { return nil }
        let transport: Int
        let proto: UInt8
        switch bytes[network] >> 4 {
        case 4:
            guard bytes.count >= network + 20 else { return nil }
            transport = network + Int(bytes[network] & 0x0F) * 4
            proto = bytes[network + 9]
        case 6:
            guard bytes.count >= network + 40 else { return nil }
            transport = network + 40
            proto = bytes[network + 6]
        default:
            return nil
        }
        guard proto == 6 || proto == 17, bytes.count >= transport + 4 else { return nil }
        let source = Int(bytes[transport]) << 8 | Int(bytes[transport + 1])
        let destination = Int(bytes[transport + 2]) << 8 | Int(bytes[transport + 3])
        return (proto, source, destination)
    }
}
