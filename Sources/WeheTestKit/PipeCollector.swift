package import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Collects what a child writes to a pipe while it runs, with blocking reads on a thread of its own until the end
/// of the stream.
///
/// Why not `FileHandle.readabilityHandler`: on Linux it arms a libdispatch read source on the pipe, and tearing that
/// source down races the descriptor's close. The race leaves a freed entry in libdispatch's epoll bookkeeping, and
/// the dispatch manager thread later dies on it with a SIGSEGV in `_dispatch_event_loop_drain`, taking the whole
/// test process with it (seen once in a full parallel run of this package, and reported upstream against
/// swift-corelibs-libdispatch and swift-corelibs-foundation). A blocking read never registers the descriptor with
/// libdispatch, so there is nothing to race.
package final class PipeCollector: Sendable {
    private struct State {
        var data = Data()
        var ended = false
    }
    private let state = Mutex(State())

    /// Starts reading `pipe`'s read end. The pipe's write end must be closed in this process once the child holds
    /// it (`TestProcess.run()` does), or the reader never sees the end of the stream.
    package init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        // The thread holds the collector (and the handle, so that its descriptor stays open) until the last read.
        let thread = Thread { [self] in
            let descriptor = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    state.withLock { $0.data.append(contentsOf: buffer[0..<count]) }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            state.withLock { $0.ended = true }
        }
        thread.name = "test-pipe"
        thread.start()
    }

    /// What was read so far, as UTF-8 (bytes that are not are replaced).
    package var text: String { state.withLock { String(decoding: $0.data, as: UTF8.self) } }

    /// Whether the writer's end is closed and everything was read.
    package var ended: Bool { state.withLock { $0.ended } }
}
