import Foundation
import WeheRecord
import WeheTestKit

/// Captures the tests write, and the helpers to record them through libpcap.
enum Fixture {
    /// 2023-11-14 22:13:20 UTC: the traces are named `<id>_11142023`.
    static let start = 1_700_000_000.0

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Writes `capture` to a temporary file and records it with `options`.
    static func record(
        _ capture: SyntheticCapture, format: SyntheticCapture.Format = .pcap, options: RecordingOptions
    ) throws -> Recording {
        let directory = TestResources.temporaryDirectory("wehe-record")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + (format == .pcap ? "/capture.pcap" : "/capture.pcapng")
        try capture.write(to: path, format: format)
        return try Recorder(options: options).record(file: path)
    }

    /// A TLS 1.3-style ClientHello record carrying `serverName` (SNI), as a browser's first bytes.
    static func clientHello(serverName: String) -> [UInt8] {
        let name = bytes(serverName)
        let serverNameList = [0] + be16(name.count) + name
        let sniExtension = [0, 0] + be16(serverNameList.count + 2) + be16(serverNameList.count) + serverNameList
        let extensions = sniExtension + [0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]  // supported_versions
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0x5a, count: 32)
        body += [0] + [0x00, 0x02, 0x13, 0x01] + [0x01, 0x00]
        body += be16(extensions.count) + extensions
        let handshake = [0x01] + [0] + be16(body.count) + body
        return [0x16, 0x03, 0x01] + be16(handshake.count) + handshake
    }

    /// A TLS record of `type` with `length` bytes of pattern content.
    static func tlsRecord(type: UInt8, length: Int, fill: UInt8) -> [UInt8] {
        [type, 0x03, 0x03] + be16(length) + [UInt8](repeating: fill, count: length)
    }

    static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// `count` bytes of a repeating pattern.
    static func body(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    }
}
