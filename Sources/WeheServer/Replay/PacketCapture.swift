import Foundation
package import Logging
package import NIOCore
import NIOExtras
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The server side of one replay connection as a pcap file (`--pcap`), written from inside the server with NIO's
/// PCAP writer, so no root and no tcpdump are needed. The records are what the server's socket sent and received
/// (TCP headers synthesised by `NIOWritePCAPHandler`; no retransmissions or kernel-level loss, which only a real
/// capture sees).
///
/// No file is opened for a connection until it is claimed by an admitted session (`claim(_:)`): until then its
/// records (the handshake and the first request) are held in memory, at most `maximumBytesBeforeClaim`, and a
/// connection never claimed (idle, `WHATSMYIPMAN`, an address without a session, evicted) costs no descriptor and
/// no disk. So the descriptors of captures are bounded by the claimed replay connections, which the connection
/// budget reserves room for (`ReplayServerConfiguration.connectionBudget`).
///
/// Once claimed, the file grows in `<pcap>/.partial/` on a serial queue (the event loop never touches the disk);
/// records past `maximumBytes` are left out (the file then ends early, still readable). When the connection closes
/// the file is renamed to `relativePath(…)` below the pcap directory. A capture that cannot be written (the
/// directory unusable, the disk full) is removed, logged and counted in `wehe_file_write_failures_total`.
package final class PacketCapture: Sendable {
    /// Records held for a connection not yet claimed: the synthesised handshake and a first request fit easily.
    package static let maximumBytesBeforeClaim = 16 * 1024

    private enum Phase {
        /// Not claimed: the records so far, and how many bytes of records were left out.
        case waiting(records: [Data], bytes: Int)
        /// Claimed: records go to the file through the queue.
        case claimed
        /// Finished (closed, or abandoned after a failure).
        case done
    }

    private let directory: String
    private let maximumBytes: Int
    private let logger: Logger
    private let metrics: ServerMetrics
    private let queue = DispatchQueue(label: "wehe.pcap")
    private let phase = Mutex<Phase>(.waiting(records: [], bytes: 0))
    private let written = Atomic<Int>(0)
    /// The open file (only touched on `queue`): its descriptor, its partial path and final name; `nil` when none.
    private let file = Mutex<(descriptor: Int32, partial: String, name: String)?>(nil)

    /// Creates a capture for one connection; opens nothing.
    package init(directory: String, maximumBytes: Int, logger: Logger, metrics: ServerMetrics = ServerMetrics()) {
        self.directory = directory
        self.maximumBytes = maximumBytes
        self.logger = logger
        self.metrics = metrics
    }

    /// The handler to put first in the connection's pipeline (closest to the socket).
    func handler() -> NIOWritePCAPHandler {
        NIOWritePCAPHandler(mode: .server, fileSink: { [self] buffer in append(buffer) })
    }

    /// Takes one chunk of pcap data: held until the claim, then queued for the file, unless the bound is reached.
    package func append(_ buffer: ByteBuffer) {
        let size = buffer.readableBytes
        phase.withLock { phase in
            switch phase {
            case .waiting(var records, let bytes):
                guard bytes + size <= Self.maximumBytesBeforeClaim else { return }
                phase = .done  // lets the array grow in place
                records.append(Data(buffer.readableBytesView))
                phase = .waiting(records: records, bytes: bytes + size)
            case .claimed:
                guard written.add(size, ordering: .relaxed).newValue <= maximumBytes else { return }
                let bytes = Data(buffer.readableBytesView)
                // Queued under the lock, so that the claim's own writes (the held records) come first.
                queue.async { [self] in writeRecord(bytes) }
            case .done:
                return
            }
        }
    }

    /// The connection was claimed by an admitted session: opens the file (on the queue), writes the pcap header and
    /// the held records, and names the capture after the replay it carries (`relativePath`, below the directory).
    /// Only the first call counts.
    package func claim(_ relativePath: String) {
        phase.withLock { phase in
            guard case .waiting(let records, _) = phase else { return }
            phase = .claimed
            let header = Data(NIOWritePCAPHandler.pcapFileHeader.readableBytesView)
            let first = [header] + records
            let size = first.reduce(0) { $0 + $1.count }
            _ = written.add(size, ordering: .relaxed)
            queue.async { [self] in
                guard openFile(relativePath) else { return }
                for record in first { writeRecord(record) }
            }
        }
    }

    /// Closes the file and moves it into place; a connection never claimed leaves nothing.
    package func finish() {
        let wasClaimed: Bool = phase.withLock { phase in
            defer { phase = .done }
            if case .claimed = phase { return true }
            return false
        }
        guard wasClaimed else { return }
        queue.async { [self] in
            let taken = file.withLock { current in
                defer { current = nil }
                return current
            }
            guard let open = taken else { return }
            let target = (directory as NSString).appendingPathComponent(open.name)
            do {
                guard close(open.descriptor) == 0 else { throw ArchiveError(message: "close: \(Self.reason())") }
                try FileManager.default.createDirectory(
                    atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                guard rename(open.partial, target) == 0 else {
                    throw ArchiveError(message: "cannot rename into \(target): \(Self.reason())")
                }
            } catch {
                unlink(open.partial)
                failed("rename", error: error, path: target)
            }
        }
    }

    /// Waits for the queued writes (tests).
    package func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    /// The reference's file name for a replay's capture; every client-chosen part goes through `ClientFileName`.
    package static func relativePath(
        userID: String, replayName: String, extraString: String, historyCount: Int, testID: Int, day: String
    ) -> String {
        let user = ClientFileName.component(userID)
        let name = ClientFileName.component(replayName)
        let extra = ClientFileName.component(extraString)
        return "replay/\(day)/\(user)/tcpdumpsResults/"
            + "dump_server_\(user)_\(name)_\(extra)_\(historyCount)_\(testID)_out.pcap"
    }

    // MARK: - On the queue

    /// Opens the partial file; `false` (logged, counted) when it cannot be.
    private func openFile(_ relativePath: String) -> Bool {
        let partialDirectory = (directory as NSString).appendingPathComponent(".partial")
        let partial = (partialDirectory as NSString).appendingPathComponent("\(UUID().uuidString).pcap")
        do {
            guard relativePath.split(separator: "/").allSatisfy({ ClientFileName.isSafe(String($0)) }) else {
                throw ArchiveError(message: "unsafe capture path \(relativePath)")
            }
            try FileManager.default.createDirectory(atPath: partialDirectory, withIntermediateDirectories: true)
            let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw ArchiveError(message: "cannot create \(partial): \(Self.reason())") }
            file.withLock { $0 = (descriptor, partial, relativePath) }
            return true
        } catch {
            failed("open", error: error, path: partial)
            return false
        }
    }

    /// Writes one record; on a failure the capture is abandoned (closed, removed, logged, counted).
    private func writeRecord(_ bytes: Data) {
        guard let open = file.withLock({ $0 }) else { return }
        let complete = bytes.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let count = write(open.descriptor, base + offset, raw.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard !complete else { return }
        let reason = Self.reason()
        file.withLock { $0 = nil }
        close(open.descriptor)
        unlink(open.partial)
        failed("write", error: ArchiveError(message: reason), path: open.partial)
    }

    private func failed(_ stage: String, error: any Error, path: String) {
        metrics.fileWriteFailed("pcap", stage: stage)
        logger.error(
            "pcap not written", metadata: ["wehe.error": "\(error)", "wehe.pcap": "\(path)", "wehe.stage": "\(stage)"])
    }

    private static func reason() -> String { String(cString: strerror(errno)) }
}

/// Keeps a connection's `PacketCapture` in its pipeline so the replay handler can name it (forwards everything).
final class PacketCaptureTag: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let capture: PacketCapture
    init(_ capture: PacketCapture) { self.capture = capture }
}
