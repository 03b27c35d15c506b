/// The side channel's framing (protocol.md section 5.1): 10 ASCII decimal digits, zero-padded, giving the body's
/// byte length, immediately followed by the body. No delimiter.
///
/// `SideChannelFramer` is an incremental decoder: feed it whatever bytes arrived (TLS records and TCP segments may
/// split or merge frames) and take complete bodies out. It refuses a prefix that is not ten ASCII digits and a body
/// longer than `maximumBodyLength`, so garbage or a prefix of `9999999999` cannot make a reader allocate.
public struct SideChannelFramer: Sendable {
    /// Length of the decimal prefix.
    public static let prefixLength = 10
    /// Default largest body accepted: 4 MiB (a throughput upload of a throttled 45 s replay is ~20 kB).
    public static let defaultMaximumBodyLength = 4 << 20

    /// Largest body accepted.
    public let maximumBodyLength: Int
    private var buffer: [UInt8] = []
    private var start = 0

    /// Creates a framer.
    public init(maximumBodyLength: Int = SideChannelFramer.defaultMaximumBodyLength) {
        self.maximumBodyLength = maximumBodyLength
    }

    /// Frames a body for sending: `0000000007NoIperf`. The length counts UTF-8 bytes, always written in ASCII.
    public static func frame(_ body: [UInt8]) -> [UInt8] {
        let digits = Array(String(body.count).utf8)
        return [UInt8](repeating: UInt8(ascii: "0"), count: max(0, prefixLength - digits.count)) + digits + body
    }

    /// Frames a text body.
    public static func frame(_ body: String) -> [UInt8] { frame(Array(body.utf8)) }

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete body, or `nil` when more bytes are needed.
    /// - Throws: `WeheWireError` `.malformedJSON`-free codes: `.invalidValue` for a non-digit prefix, `.tooLarge` for a
    ///   body above the limit. After an error the stream is unusable (the caller closes the connection).
    public mutating func nextFrame() throws(WeheWireError) -> [UInt8]? {
        guard bufferedByteCount >= Self.prefixLength else { return nil }
        var length = 0
        for index in start..<(start + Self.prefixLength) {
            let byte = buffer[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw WeheWireError(
                    .invalidValue,
                    "side-channel length prefix is not 10 ASCII digits",
                    field: "length prefix",
                    offset: index - start
                )
            }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard length <= maximumBodyLength else {
            throw WeheWireError(
                .tooLarge,
                "side-channel message of \(length) bytes exceeds the limit of \(maximumBodyLength)",
                field: "length prefix"
            )
        }
        guard bufferedByteCount >= Self.prefixLength + length else { return nil }
        let bodyStart = start + Self.prefixLength
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        start = bodyStart + length
        if start > 65536, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return body
    }
}
