import Foundation
import Testing
import WeheRecord
import WeheTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// A real capture: tcpdump records a TCP exchange between two loopback addresses that this test makes itself.
@Suite("wehe record on a real tcpdump capture of loopback traffic")
struct LoopbackCaptureTests {
    static let tcpdump = ["/usr/bin/tcpdump", "/usr/sbin/tcpdump"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    /// tcpdump needs CAP_NET_RAW: run when it is installed and we are root.
    static let available = tcpdump != nil && geteuid() == 0

    static let serverAddress = "127.0.0.132"

    @Test(
        "a request and 256 KiB answer, captured on lo, become a trace with every byte in place", .enabled(if: available)
    )
    func realCapture() async throws {
        let directory = TestResources.temporaryDirectory("wehe-record-lo")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let listener = try Socket.listen(on: Self.serverAddress)
        defer { close(listener.descriptor) }
        // Start tcpdump and wait until it says it listens.
        let pcap = directory + "/lo.pcap"
        let errorPath = directory + "/tcpdump.err"
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        let process = TestProcess()
        process.executableURL = URL(fileURLWithPath: try #require(Self.tcpdump))
        process.arguments = [
            "-i", "lo", "-n", "-U", "-Z", "root", "-w", pcap,
            "host \(Self.serverAddress) and tcp port \(listener.port)",
        ]
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // SIGKILL is enough: every packet the test needs is on disk already (-U writes each packet as it comes, and the
        // loop below waits for them).
        defer { process.killIfRunning() }
        // Bounds for a hang only: a loaded machine (the full parallel run) delays tcpdump's start and its writes by
        // tens of seconds; one 30 s bound for both once ran out before the capture held the answer.
        let errorText = { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }
        guard try await process.waitWhileRunning(until: { errorText().contains("listening on") }) else {
            Issue.record("tcpdump did not start: \(errorText())")
            return
        }
        let clock = ContinuousClock()
        // The exchange: a request, then the answer in 16 KiB pieces, each read before the next is sent.
        let request = Array("GET /song.ogg HTTP/1.1\r\nHost: music.example.com\r\n\r\n".utf8)
        let answer = (0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let client = try Socket.connect(from: "127.0.0.1", to: Self.serverAddress, port: listener.port)
        defer { close(client) }
        let accepted = accept(listener.descriptor, nil, nil)
        #expect(accepted >= 0)
        defer { close(accepted) }
        try Socket.send(client, request)
        #expect(try Socket.receive(accepted, count: request.count) == request)
        for start in stride(from: 0, to: answer.count, by: 16_384) {
            let piece = Array(answer[start..<min(answer.count, start + 16_384)])
            try Socket.send(accepted, piece)
            #expect(try Socket.receive(client, count: piece.count) == piece)
        }
        // Wait until tcpdump has written the whole answer (it writes each packet as it comes: -U).
        var options = RecordingOptions(client: "127.0.0.1", id: "song")
        options.ports = [listener.port]
        var recording: Recording?
        var lastSeen = "nothing readable"
        let written = clock.now.advanced(by: .seconds(120))
        while clock.now < written {
            do {
                let attempt = try Recorder(options: options).record(file: pcap)
                if attempt.report.bytesDown == answer.count {
                    recording = attempt
                    break
                }
                lastSeen = "\(attempt.report.frames) frames, \(attempt.report.bytesDown) bytes down"
            } catch {
                lastSeen = "\(error)"
            }
            try await clock.sleep(for: .milliseconds(50))
        }
        let result = try #require(recording, "the capture never held the whole answer; last read: \(lastSeen)")
        #expect(result.client.packets.flatMap(\.payload) == request)
        #expect(result.client.packets.last?.responseLength == answer.count)
        #expect(result.server.tcpFlows.first?.groups.first?.segments?.flatMap(\.payload) == answer)
        #expect(result.client.tcpCSPairs.first?.hasPrefix("010.000.000.001.") == true)
        #expect(result.client.tcpCSPairs.first?.hasSuffix("-127.000.000.132.\(CSPairText.pad(listener.port))") == true)
        #expect(result.report.flows.first?.host == "music.example.com")
        #expect(result.report.frames > 10)
    }
}

enum CSPairText {
    static func pad(_ port: UInt16) -> String {
        let digits = String(port)
        return String(repeating: "0", count: 5 - digits.count) + digits
    }
}

/// Blocking loopback sockets, enough for one exchange in one thread.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func address(_ text: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, text, &address.sin_addr)
        return address
    }

    static func listen(on host: String) throws -> (descriptor: Int32, port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var bound = address(host, port: 0)
        let status = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0, Glibc.listen(descriptor, 4) == 0 else { throw Failure(description: "bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, UInt16(bigEndian: bound.sin_port))
    }

    static func connect(from source: String, to host: String, port: UInt16) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = address(source, port: 0)
        var remote = address(host, port: port)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, connected == 0 else { throw Failure(description: "connect failed: errno \(errno)") }
        return descriptor
    }

    /// One exchange through `listener`: a connection from `source` to `host`, `request` up and `answer` down, each
    /// read whole by the other end, then both ends closed.
    static func exchange(
        _ listener: (descriptor: Int32, port: UInt16), from source: String, to host: String, request: [UInt8],
        answer: [UInt8]
    ) throws {
        let client = try connect(from: source, to: host, port: listener.port)
        defer { close(client) }
        let accepted = accept(listener.descriptor, nil, nil)
        defer { close(accepted) }
        try send(client, request)
        _ = try receive(accepted, count: request.count)
        try send(accepted, answer)
        _ = try receive(client, count: answer.count)
    }

    static func send(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard sent > 0 else { throw Failure(description: "send failed: errno \(errno)") }
            offset += sent
        }
    }

    static func receive(_ descriptor: Int32, count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            let wanted = min(buffer.count, count - result.count)
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, wanted, 0) }
            guard received > 0 else { throw Failure(description: "receive failed: errno \(errno)") }
            result += buffer[..<received]
        }
        return result
    }
}

/// Live capture through libpcap (`wehe record --interface`), on lo only.
@Suite("wehe record --interface: a live capture on lo")
struct LiveCaptureTests {
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    /// Runs `body` on a new thread and waits for it without holding a thread of the shared pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    @Test(
        "exchanges made while the recorder captures become flows; a whole one is the test; the capture ends on request",
        .enabled(if: LoopbackCaptureTests.available))
    func liveCapture() async throws {
        let listener = try Socket.listen(on: "127.0.0.133")
        defer { close(listener.descriptor) }
        var options = RecordingOptions(client: "127.0.0.1", id: "live")
        options.ports = [listener.port]
        // The kernel keeps only this traffic for the capture: in a full parallel test run other tests push hundreds
        // of megabytes through lo.
        #expect(options.captureFilter == "host 127.0.0.1 and (tcp or udp) and (port \(listener.port))")
        let opened = Flag()
        let stop = Flag()
        // The exchanges start once the interface is open and the capture ends when they are done (as Ctrl-C ends it
        // on the command line), whatever the load: a fixed 2 s window once held a single half exchange on a loaded
        // machine. 120 s bounds the capture only should the test never ask it to stop.
        // On a thread of its own: the capture blocks while it waits for frames, and a test that held one of the
        // shared pool's threads (two on this machine) for that long would slow every other test of the run.
        let capture = Task { [options] in
            try await Self.onThread {
                try Recorder(options: options).record(
                    interface: "lo", seconds: 120, opened: { opened.set() }, stop: { stop.isSet })
            }
        }
        let clock = ContinuousClock()
        let giveUp = clock.now.advanced(by: .seconds(60))
        while !opened.isSet, clock.now < giveUp { try await Task.sleep(for: .milliseconds(20)) }
        #expect(opened.isSet, "the capture never opened lo")
        let answer = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let exchanges = 3
        for index in 0..<exchanges {
            let request = Array("GET /live/\(index) HTTP/1.1\r\nHost: live.example.com\r\n\r\n".utf8)
            try Socket.exchange(listener, from: "127.0.0.1", to: "127.0.0.133", request: request, answer: answer)
        }
        let started = clock.now
        stop.set()
        let recording = try await capture.value
        // The loop looks at the request every 200 ms at most, then reads what the kernel still holds.
        #expect(started.duration(to: clock.now) < .seconds(30))
        let kept = try #require(recording.report.flows.first { $0.kept })
        #expect(kept.bytesDown == answer.count)
        #expect(kept.host == "live.example.com")
        #expect(recording.server.tcpFlows.first?.groups.first?.segments?.flatMap(\.payload) == answer)
        // Every exchange, whole: the frames read after the stop belong to it.
        let ours = recording.report.flows.filter { $0.host == "live.example.com" }
        #expect(ours.count == exchanges)
        #expect(ours.allSatisfy { $0.bytesDown == answer.count }, "\(ours.map(\.bytesDown))")
    }
}
