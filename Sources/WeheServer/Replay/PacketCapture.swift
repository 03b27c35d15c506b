import Foundation
import Logging
import NIOCore
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
/// The file grows in `<pcap>/.partial/` on a serial queue (the event loop never touches the disk); records past
/// `maximumBytes` are left out (the file then ends early, still readable). When the connection closes, a capture
/// named by its replay (`name(_:)`) is renamed to
/// `replay/YYYY/MM/DD/<user>/tcpdumpsResults/dump_server_<user>_<replay>_<extraString>_<historyCount>_<testID>_out.pcap`
/// (the reference's layout); a connection that carried no replay (`WHATSMYIPMAN`, refused) leaves no file.
final class PacketCapture: Sendable {
    private let directory: String
    private let partialPath: String
    private let maximumBytes: Int
    private let logger: Logger
    private let queue = DispatchQueue(label: "wehe.pcap")
    private let written = Atomic<Int>(0)
    private let finalName = Mutex<String?>(nil)
    private let handle: FileHandle

    /// Opens the partial file and writes the pcap header; `nil` (logged) when the directory is unusable.
    init?(directory: String, maximumBytes: Int, logger: Logger) {
        self.directory = directory
        self.maximumBytes = maximumBytes
        self.logger = logger
        let partial = (directory as NSString).appendingPathComponent(".partial")
        partialPath = (partial as NSString).appendingPathComponent("\(UUID().uuidString).pcap")
        do {
            try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: partialPath, contents: nil) else {
                throw ArchiveError(message: "cannot create \(partialPath)")
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: partialPath))
        } catch {
            logger.error("pcap not written", metadata: ["wehe.error": "\(error)", "wehe.pcap": "\(directory)"])
            return nil
        }
        append(NIOWritePCAPHandler.pcapFileHeader)
    }

    /// The handler to put first in the connection's pipeline (closest to the socket).
    func handler() -> NIOWritePCAPHandler {
        NIOWritePCAPHandler(mode: .server, fileSink: { [self] buffer in append(buffer) })
    }

    /// Queues one chunk of pcap data unless the file would exceed its bound.
    func append(_ buffer: ByteBuffer) {
        let size = buffer.readableBytes
        guard written.add(size, ordering: .relaxed).newValue <= maximumBytes else { return }
        let bytes = Data(buffer.readableBytesView)
        queue.async { [handle] in
            try? handle.write(contentsOf: bytes)
        }
    }

    /// Names the capture after the replay it carried (the relative path below the pcap directory).
    func name(_ relativePath: String) { finalName.withLock { $0 = relativePath } }

    /// Closes the file and moves it into place, or removes it when no replay was named.
    func finish() {
        queue.async { [self] in
            try? handle.close()
            guard let name = finalName.withLock({ $0 }) else {
                unlink(partialPath)
                return
            }
            let target = (directory as NSString).appendingPathComponent(name)
            do {
                try FileManager.default.createDirectory(
                    atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                guard rename(partialPath, target) == 0 else {
                    throw ArchiveError(message: "cannot rename into \(target): \(String(cString: strerror(errno)))")
                }
            } catch {
                unlink(partialPath)
                logger.error("pcap not written", metadata: ["wehe.error": "\(error)", "wehe.pcap": "\(target)"])
            }
        }
    }

    /// Waits for the queued writes (tests).
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    /// The reference's file name for a replay's capture.
    static func relativePath(
        userID: String, replayName: String, extraString: String, historyCount: Int, testID: Int, day: String
    ) -> String {
        let safeUser = userID.replacingOccurrences(of: "/", with: "_")
        let safeName = replayName.replacingOccurrences(of: "/", with: "_")
        let safeExtra = extraString.replacingOccurrences(of: "/", with: "_")
        return "replay/\(day)/\(safeUser)/tcpdumpsResults/"
            + "dump_server_\(safeUser)_\(safeName)_\(safeExtra)_\(historyCount)_\(testID)_out.pcap"
    }
}

/// Keeps a connection's `PacketCapture` in its pipeline so the replay handler can name it (forwards everything).
final class PacketCaptureTag: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let capture: PacketCapture
    init(_ capture: PacketCapture) { self.capture = capture }
}
