import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Packet capture (--pcap)", .timeLimit(.minutes(6)))
struct PacketCaptureTests {
    /// The pcap files below `directory`, waiting (bounded) until `count` of them are in place: a capture is moved
    /// into place once its connection has closed, which may be just after the side channel ends.
    static func captures(in directory: String, count: Int) async throws -> [String] {
        var found: [String] = []
        for _ in 0..<200 {
            found = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".pcap") && !$0.hasPrefix(".partial") }
            if found.count >= count { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        return found.map { directory + "/" + $0 }
    }

    @Test("a replay leaves a readable pcap named like the reference's, with the header magic and records")
    func replayCapture() async throws {
        let directory = TestResources.temporaryDirectory("wehe-pcap")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let withPcap: (inout ReplayServerConfiguration) -> Void = { $0.pcapDirectory = directory }
        try await ServerHarness.run(configure: withPcap) { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.okAfterResult == "OK")
        }
        let files = try await Self.captures(in: directory, count: 1)
        try #require(files.count == 1, "one capture expected, found \(files)")
        let file = try #require(files.first)
        #expect(file.hasSuffix("/@abcdef123/tcpdumpsResults/dump_server_@abcdef123_TinyWeb-11212026_0_1_0_out.pcap"))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        // Global header: magic 0xa1b2c3d4 (written little-endian), version 2.4, link type 1 (Ethernet).
        try #require(bytes.count > 24 + 16)
        #expect(Array(bytes[0..<4]) == [0xD4, 0xC3, 0xB2, 0xA1])
        #expect(bytes[4] == 2 && bytes[6] == 4)
        // Walk the records: each is a 16-byte header whose captured length is followed by that many bytes.
        var offset = 24
        var records = 0
        while offset + 16 <= bytes.count {
            let length =
                Int(bytes[offset + 8]) | Int(bytes[offset + 9]) << 8 | Int(bytes[offset + 10]) << 16
                | Int(bytes[offset + 11]) << 24
            offset += 16 + length
            records += 1
        }
        #expect(offset == bytes.count, "the records must tile the file exactly")
        #expect(records >= 3, "a handshake and the replay's data should give several records, got \(records)")
        // The response bytes the server sent (400 000) are in the capture, with their TCP/IP headers.
        #expect(bytes.count > 400_000)
    }

    @Test("a capture stops at --pcap-max-bytes and a connection without a replay leaves no file")
    func boundedAndNamedOnly() async throws {
        let directory = TestResources.temporaryDirectory("wehe-pcap-bounded")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let bounded: (inout ReplayServerConfiguration) -> Void = {
            $0.pcapDirectory = directory
            $0.pcapMaximumBytes = 20_000
        }
        try await ServerHarness.run(configure: bounded) { server in
            // WHATSMYIPMAN: a replay port connection that carries no replay.
            let connection = try await RawConnection.connect(port: server.tcp(80))
            try await connection.channel.executeThenClose { inbound, outbound in
                try await outbound.write(.init(string: "GET /WHATSMYIPMAN HTTP/1.1\r\nHost: x\r\n\r\n"))
                for try await _ in inbound {}
            }
            _ = try await ScriptedClient().run(trace, testID: 0, server: server)
        }
        let files = try await Self.captures(in: directory, count: 1)
        #expect(files.count == 1, "only the replay's connection leaves a capture: \(files)")
        let file = try #require(files.first)
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        let size = try #require(attributes[.size] as? Int)
        #expect(size <= 20_000 && size > 24)
        let partial = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/.partial")) ?? []
        #expect(partial.isEmpty, "no partial files left: \(partial)")
    }
}
