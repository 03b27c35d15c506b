/// Why a recording could not be read or turned into a test.
public struct WeheRecordError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: Sendable, Hashable {
        /// libpcap is not installed (it is loaded at run time, so every other command works without it).
        case libpcapMissing
        /// The capture file is missing or unreadable.
        case unreadable
        /// The capture is not a pcap or pcapng file, is truncated, or uses a link type we do not decode.
        case malformed
        /// The options or the capture's content do not give a usable test (no flow of the client, …).
        case unusable
        /// The output could not be written.
        case writeFailed
        /// A live capture could not be opened (interface, permission).
        case captureFailed
    }

    /// The kind.
    public let code: Code
    /// One line for the user.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
