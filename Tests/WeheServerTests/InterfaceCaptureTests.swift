import Foundation
import Logging
import Testing
import WeheCore
import WeheServer
import WeheTestKit
import WeheWire

@Suite("Packet capture on an interface (--capture-interface)", .timeLimit(.minutes(6)))
struct InterfaceCaptureTests {
    @Test("the filter names the client's address and each of its replay's server ports")
    func filter() {
        #expect(
            InterfaceCaptures.filter(client: "198.18.0.2", tcpPorts: [443, 80], udpPorts: [3478])
                == "host 198.18.0.2 and (tcp port 80 or tcp port 443 or udp port 3478)")
        #expect(InterfaceCaptures.filter(client: "198.18.0.2", tcpPorts: [], udpPorts: []) == "host 198.18.0.2")
    }

    @Test("a capture that cannot open its interface says why, starts nothing and holds no bound")
    func unavailable() throws {
        let directory = TestResources.temporaryDirectory("wehe-capture")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var settings = InterfaceCaptureSettings(interface: "nosuchif9")
        settings.maximumPerNetwork = 1
        let captures = InterfaceCaptures(settings: settings, directory: directory, logger: Logger(label: "test"))
        let reason = try #require(captures.availability())
        #expect(reason.contains("nosuchif9") || reason.contains("libpcap"), "\(reason)")
        for id in UInt64(1)...3 {
            #expect(
                !captures.start(
                    id: id, client: "198.18.0.2", tcpPorts: [80], udpPorts: [], relativePath: "replay/x/\(id).pcap"))
        }
        #expect(captures.count == 0)
        let left = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".pcap") }
        #expect(left.isEmpty, "\(left)")
    }

    /// Whether this machine can capture on loopback (libpcap installed, CAP_NET_RAW).
    static let loopbackCaptures =
        InterfaceCaptures(
            settings: InterfaceCaptureSettings(interface: "lo"), directory: "/nonexistent",
            logger: Logger(label: "test")
        ).availability() == nil

    @Test(
        "captures that start together from different networks stay within the overall bound",
        .enabled(if: loopbackCaptures, "capturing on lo needs libpcap and CAP_NET_RAW")
    )
    func overallBoundUnderConcurrentStarts() async throws {
        let directory = TestResources.temporaryDirectory("wehe-capture")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var settings = InterfaceCaptureSettings(interface: "lo")
        settings.maximumConcurrent = 2
        let captures = InterfaceCaptures(settings: settings, directory: directory, logger: Logger(label: "test"))
        // Sixteen threads of their own, each starting one capture for a client of another /24: opening the
        // interface takes a while, and the overall bound used to count only the captures already open, so starts
        // that arrived together all passed it.
        let started = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                group.addTask {
                    await onOwnThread {
                        captures.start(
                            id: UInt64(index + 1), client: "198.18.\(index).2", tcpPorts: [80], udpPorts: [],
                            relativePath: "replay/x/\(index).pcap") ? 1 : 0
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let running = captures.count
        await captures.finishAll()
        #expect(started == settings.maximumConcurrent)
        #expect(running == settings.maximumConcurrent)
    }

    @Test("a test whose capture cannot start still runs to its result, and leaves no pcap")
    func testRunsWithoutCapture() async throws {
        let directory = TestResources.temporaryDirectory("wehe-capture")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays)
            .trace(file: "TinyWeb_11212026.pcap_client_all.json")
        let configure: (inout ReplayServerConfiguration) -> Void = {
            $0.pcapDirectory = directory
            $0.capture = InterfaceCaptureSettings(interface: "nosuchif9")
        }
        try await ServerHarness.run(configure: configure) { server in
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.okAfterResult == "OK")
        }
        let files = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".pcap") }
        #expect(files.isEmpty, "no socket-view pcap either when an interface is configured: \(files)")
    }
}
