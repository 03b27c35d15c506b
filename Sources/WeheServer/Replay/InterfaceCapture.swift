import Foundation
package import Logging
import Synchronization
import WehePcap

#if canImport(Glibc)
    import Glibc
#endif

/// The bounds of the packet capture on an interface (`--capture-interface`, M-Lab's second image argument).
package struct InterfaceCaptureSettings: Sendable, Hashable {
    /// The interface to capture on (`net1` on M-Lab, `lo` in tests).
    package var interface: String
    /// Bytes kept of each frame (headers and the start of the payload at the default).
    package var snapLength = 256
    /// Largest capture file per test, bytes; frames beyond it are counted, not written.
    package var maximumBytes = 64 * 1024 * 1024
    /// Longest a test's capture runs, whatever its session does.
    package var maximumDuration: Duration = .seconds(15 * 60)
    /// Captures running at once on this server (each holds a capture socket, a file and a thread).
    package var maximumConcurrent = 32
    /// Captures running at once for one client network (IPv4 /24, IPv6 /48).
    package var maximumPerNetwork = 2

    /// Settings for `interface` with the default bounds.
    package init(interface: String) { self.interface = interface }
}

/// Captures each admitted test's packets on a network interface with libpcap (loaded at run time, `WehePcap`),
/// filtered on the client's address and the replay's server ports, into one pcap per test named as the published
/// server names it (`PacketCapture.relativePath`), where pusher archives it. The capture starts when the side
/// channel admits the test (so it holds the replay connection's handshake) and ends when the session ends.
///
/// Bounded: the snap length, bytes and duration per capture, and the number of captures at once overall and per
/// client network (each costs a capture socket, a file descriptor and a reader thread). A test whose capture
/// cannot start (no libpcap, no CAP_NET_RAW, a bound reached) runs without one; the reason is logged and counted.
package final class InterfaceCaptures: Sendable {
    private let settings: InterfaceCaptureSettings
    private let directory: String
    private let logger: Logger
    private let metrics: ServerMetrics
    /// Recorded server port to the port this server listens on, per transport.
    private let listening: (tcp: [Int: Int], udp: [Int: Int])
    private struct State {
        var running: [UInt64: Running] = [:]
        var perNetwork: [String: Int] = [:]
        /// Captures running or still opening: the sum of `perNetwork`. A capture is counted here from the moment
        /// it is admitted, before its interface is opened, so that starts arriving together cannot all pass the
        /// overall bound while none of them is running yet.
        var held = 0
        var lastFailure: String?
    }
    private let state = Mutex(State())

    /// Creates the captures of one server; starts nothing.
    package init(
        settings: InterfaceCaptureSettings, directory: String, logger: Logger, metrics: ServerMetrics = ServerMetrics(),
        listening: (tcp: [Int: Int], udp: [Int: Int]) = ([:], [:])
    ) {
        self.listening = listening
        self.settings = settings
        self.directory = directory
        self.logger = logger
        self.metrics = metrics
    }

    /// Whether a capture can be opened on the interface now (libpcap present, interface there, CAP_NET_RAW);
    /// `nil` when it can, else the reason. The server says it once at start.
    package func availability() -> String? {
        do {
            let library = try LibPcap.load()
            _ = try library.open(interface: settings.interface, snapLength: 64, timeoutMilliseconds: 10)
            return nil
        } catch {
            return error.message
        }
    }

    /// The filter for a test: the client's address, and the server ports its replay uses.
    package static func filter(client: String, tcpPorts: [Int], udpPorts: [Int]) -> String {
        let ports = tcpPorts.sorted().map { "tcp port \($0)" } + udpPorts.sorted().map { "udp port \($0)" }
        let host = "host \(client)"
        return ports.isEmpty ? host : "\(host) and (\(ports.joined(separator: " or ")))"
    }

    /// Starts the capture of an admitted session: its client's address, the ports its replay's flows use on this
    /// server, the file named after its declaration and the day it was admitted.
    @discardableResult
    package func start(session: Session, client: String, day: String) -> Bool {
        let replay = session.replay
        let tcp = Set(replay.server.tcpFlows.compactMap { listening.tcp[Int($0.csPair.serverPort)] })
        let udp = Set(replay.server.udpFlows.compactMap { listening.udp[Int($0.csPair.serverPort)] })
        let declaration = session.declaration
        return start(
            id: session.id, client: client, tcpPorts: Array(tcp), udpPorts: Array(udp),
            relativePath: PacketCapture.relativePath(
                userID: declaration.userID, replayName: declaration.replayName,
                extraString: declaration.extraString, historyCount: declaration.historyCount,
                testID: declaration.testID, day: day))
    }

    /// Starts the capture of session `id` into `relativePath` below the directory; `false` (logged) when it does
    /// not run, and the test goes on without it.
    @discardableResult
    package func start(id: UInt64, client: String, tcpPorts: [Int], udpPorts: [Int], relativePath: String) -> Bool {
        let network = AddressText.network(client)
        let admitted: Bool = state.withLock { state in
            guard state.held < settings.maximumConcurrent,
                state.perNetwork[network, default: 0] < settings.maximumPerNetwork
            else { return false }
            state.perNetwork[network, default: 0] += 1
            state.held += 1
            return true
        }
        guard admitted else {
            unavailable("the bound of captures at once is reached (overall or for the client's network)")
            return false
        }
        let running: Running
        do {
            guard relativePath.split(separator: "/").allSatisfy({ ClientFileName.isSafe(String($0)) }) else {
                throw PcapError(.captureFailed, "unsafe capture path \(relativePath)")
            }
            let library = try LibPcap.load()
            let handle = try library.open(
                interface: settings.interface, snapLength: Int32(settings.snapLength), timeoutMilliseconds: 100)
            try handle.filter(Self.filter(client: client, tcpPorts: tcpPorts, udpPorts: udpPorts))
            try handle.makeNonBlocking()
            running = try Running(
                handle: handle, directory: directory, relativePath: relativePath, settings: settings,
                narrowing: udpPorts.isEmpty)
        } catch {
            state.withLock { Self.release(network, in: &$0) }
            unavailable("\(error)")
            return false
        }
        state.withLock { state in
            state.running[id] = running
            state.lastFailure = nil
        }
        metrics.captureStarted()
        let logger = self.logger
        let metrics = self.metrics
        Thread.detachNewThread { [self] in
            let outcome = running.loop()
            state.withLock { state in
                state.running[id] = nil
                Self.release(network, in: &state)
            }
            switch outcome {
            case .written(let frames, let leftOut):
                logger.debug(
                    "capture written",
                    metadata: [
                        "wehe.pcap": "\(relativePath)", "wehe.frames": "\(frames)", "wehe.left_out": "\(leftOut)",
                    ])
            case .failed(let reason):
                metrics.fileWriteFailed("pcap", stage: "capture")
                logger.error("pcap not written", metadata: ["wehe.pcap": "\(relativePath)", "wehe.error": "\(reason)"])
            }
            running.finished()
        }
        return true
    }

    /// Session `id`'s TCP replay connection was claimed: its capture keeps that connection's frames only (the
    /// client's other connections to the same port, such as another test's, are left out).
    package func claim(id: UInt64, clientPort: Int) {
        state.withLock { $0.running[id] }?.claim(clientPort: clientPort)
    }

    /// Ends the capture of session `id` (its session ended): the frames still buffered are read, then the file
    /// is closed and moved into place. Returns at once.
    package func finish(id: UInt64) {
        state.withLock { $0.running[id] }?.stop()
    }

    /// Ends every capture and waits until their files are in place (server shutdown).
    package func finishAll() async {
        let running = state.withLock { Array($0.running.values) }
        for capture in running {
            capture.stop()
            await capture.waitUntilFinished()
        }
    }

    /// How many captures run now.
    package var count: Int { state.withLock { $0.running.count } }

    private static func release(_ network: String, in state: inout State) {
        let left = state.perNetwork[network, default: 1] - 1
        state.perNetwork[network] = left > 0 ? left : nil
        state.held = max(0, state.held - 1)
    }

    /// Logs why a capture did not start: at notice the first time a reason appears, at debug while it repeats.
    private func unavailable(_ reason: String) {
        metrics.captureUnavailable()
        let repeated = state.withLock { state in
            defer { state.lastFailure = reason }
            return state.lastFailure == reason
        }
        let metadata: Logger.Metadata = ["wehe.interface": "\(settings.interface)", "wehe.reason": "\(reason)"]
        if repeated {
            logger.debug("test runs without a packet capture", metadata: metadata)
        } else {
            logger.notice("packet capture unavailable: the test runs without one", metadata: metadata)
        }
    }
}

/// One test's capture: the libpcap handle, read on its own thread into a partial file.
private final class Running: @unchecked Sendable {
    enum Outcome {
        case written(frames: Int, leftOut: Int)
        case failed(String)
    }

    private let handle: LibPcap.Handle
    private let partial: String
    private let target: String
    private let descriptor: Int32
    private let settings: InterfaceCaptureSettings
    private let stopped = Atomic<Bool>(false)
    /// Whether the capture narrows to one TCP connection once claimed (TCP replays; a UDP replay keeps its flows).
    private let narrowing: Bool
    private let clientPort = Mutex<Int?>(nil)
    /// Frames held until the claim.
    static let pendingMaximumBytes = 256 * 1024
    private let done = Mutex<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Opens the partial file and writes the pcap header (on the caller's thread: a failure is the caller's).
    init(
        handle: LibPcap.Handle, directory: String, relativePath: String, settings: InterfaceCaptureSettings,
        narrowing: Bool
    ) throws {
        self.handle = handle
        self.narrowing = narrowing
        self.settings = settings
        let partialDirectory = (directory as NSString).appendingPathComponent(".partial")
        try FileManager.default.createDirectory(atPath: partialDirectory, withIntermediateDirectories: true)
        partial = (partialDirectory as NSString).appendingPathComponent("\(UUID().uuidString).pcap")
        target = (directory as NSString).appendingPathComponent(relativePath)
        descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw PcapError(.captureFailed, "cannot create \(partial): \(String(cString: strerror(errno)))")
        }
        let header = PcapFileFormat.fileHeader(linkType: handle.linkType, snapLength: Int32(settings.snapLength))
        guard Self.writeAll(header, to: descriptor) else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlink(partial)
            throw PcapError(.captureFailed, "cannot write \(partial): \(reason)")
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// The test's replay connection was claimed from `port`: from now on only its frames are written.
    func claim(clientPort port: Int) { clientPort.withLock { $0 = $0 ?? port } }

    /// Reads frames until stopped (then until the buffered ones are read, at most one second more) or the
    /// duration bound; writes them up to the byte bound; closes and moves the file into place.
    func loop() -> Outcome {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: settings.maximumDuration)
        var drainDeadline: ContinuousClock.Instant?
        var written = 24
        var frames = 0
        var leftOut = 0
        var failure: String?
        // Frames seen before the replay connection is claimed (its handshake among them), at most
        // `pendingMaximumBytes`: once its client port is known, only that connection's are written.
        var pending: [PcapFrame] = []
        var pendingBytes = 0
        func emit(_ frame: PcapFrame) -> Bool {
            let record = PcapFileFormat.record(frame)
            guard written + record.count <= settings.maximumBytes else {
                leftOut += 1
                return true
            }
            guard Self.writeAll(record, to: descriptor) else {
                failure = "write: \(String(cString: strerror(errno)))"
                return false
            }
            written += record.count
            frames += 1
            return true
        }
        func matches(_ frame: PcapFrame, port: Int) -> Bool {
            guard let ports = PcapFramePorts.ports(frame.bytes, linkType: handle.linkType) else { return false }
            return ports.protocol == 6 && (ports.source == port || ports.destination == port)
        }
        func flushPending(port: Int?) -> Bool {
            defer {
                pending = []
                pendingBytes = 0
            }
            for frame in pending where port.map({ matches(frame, port: $0) }) ?? true {
                guard emit(frame) else { return false }
            }
            return true
        }
        reading: while clock.now < deadline {
            if drainDeadline == nil, stopped.load(ordering: .relaxed) {
                drainDeadline = clock.now.advanced(by: .seconds(1))
            }
            if let drainDeadline, clock.now >= drainDeadline { break }
            let port = narrowing ? clientPort.withLock { $0 } : nil
            if let port, !pending.isEmpty {
                guard flushPending(port: port) else { break }
            }
            let next: LibPcap.Handle.Next
            do {
                next = try handle.next()
            } catch {
                failure = error.message
                break
            }
            switch next {
            case .frame(let frame):
                if narrowing, port == nil {
                    guard pendingBytes + frame.bytes.count <= Self.pendingMaximumBytes else {
                        leftOut += 1
                        continue
                    }
                    pending.append(frame)
                    pendingBytes += frame.bytes.count
                } else if port.map({ matches(frame, port: $0) }) ?? true {
                    guard emit(frame) else { break reading }
                }
            case .timeout:
                // Nothing buffered: once stopped, the capture is complete when nothing more arrives for 0.2 s (the
                // connection's last segments may still be on their way); else wait for more.
                let readable = handle.waitReadable(milliseconds: drainDeadline == nil ? 100 : 200)
                if drainDeadline != nil, !readable { break reading }
            case .end:
                break reading
            }
        }
        // Claimed in the last round, or never (the connection never came: what was seen is kept).
        if failure == nil, !pending.isEmpty { _ = flushPending(port: clientPort.withLock { $0 }) }
        if failure == nil, close(descriptor) != 0 { failure = "close: \(String(cString: strerror(errno)))" }
        if let failure {
            unlink(partial)
            return .failed(failure)
        }
        do {
            try FileManager.default.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard rename(partial, target) == 0 else {
                throw PcapError(.captureFailed, "cannot rename into \(target): \(String(cString: strerror(errno)))")
            }
        } catch {
            unlink(partial)
            return .failed("\(error)")
        }
        return .written(frames: frames, leftOut: leftOut)
    }

    func finished() {
        let waiters = done.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = done.withLock { state in
                if state.finished { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let count = write(descriptor, base + offset, raw.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
    }
}
