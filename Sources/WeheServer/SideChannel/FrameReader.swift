import NIOCore
import WeheWire

/// Reads side-channel frames from a connection's inbound stream with a per-phase size limit: before admission only
/// small messages are accepted, so a hostile prefix (`9999999999`) or a flood of bytes is refused after a few KiB.
struct FrameReader: ~Copyable {
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var framer: SideChannelFramer
    /// Largest body accepted now.
    var limit: Int
    /// Bytes read from the connection so far (0: the client has sent nothing).
    private(set) var receivedByteCount = 0

    init(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, limit: Int, hardLimit: Int) {
        self.iterator = inbound.makeAsyncIterator()
        self.framer = SideChannelFramer(maximumBodyLength: hardLimit)
        self.limit = limit
    }

    /// The next body.
    /// - Throws: `ReplayServerError` `.protocolViolation` for bad framing or an oversized body,
    ///   `.connectionClosed` at end of stream; errors of the channel pass through.
    mutating func next() async throws -> [UInt8] {
        while true {
            let frame: [UInt8]?
            do {
                frame = try framer.nextFrame()
            } catch {
                throw ReplayServerError(
                    .protocolViolation, "bad side-channel framing: \(error.message)", underlying: error)
            }
            if let frame {
                guard frame.count <= limit else {
                    throw ReplayServerError(
                        .protocolViolation, "side-channel message of \(frame.count) bytes exceeds \(limit) bytes")
                }
                return frame
            }
            if framer.bufferedByteCount > limit + SideChannelFramer.prefixLength {
                throw ReplayServerError(
                    .protocolViolation, "side-channel message longer than \(limit) bytes (still arriving)")
            }
            guard let buffer = try await iterator.next() else {
                throw ReplayServerError(.connectionClosed, "the client closed the side channel")
            }
            receivedByteCount += buffer.readableBytes
            framer.append(buffer.readableBytesView)
        }
    }

    /// The next body as text (bodies are ASCII).
    mutating func nextText() async throws -> String {
        String(decoding: try await next(), as: UTF8.self)
    }
}
