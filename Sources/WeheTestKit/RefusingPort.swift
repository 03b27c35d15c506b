#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP port on a loopback address where connections are refused, for as long as this value lives: a socket bound
/// to it without listening. Closing a listener to get "a port nothing listens on" is racy in a parallel suite: the
/// kernel can hand the number to another test's ephemeral bind at once (a full run once reached a TLS server there
/// instead of a refusal). A bound socket keeps the number reserved; without `SO_REUSEADDR` on it, no other socket
/// can bind it, and a connection attempt gets a reset.
public final class RefusingPort: Sendable {
    /// The reserved port number.
    public let port: Int
    private let descriptor: Int32

    /// Binds a TCP socket to `host` (an IPv4 address) on a port the kernel picks.
    public init(host: String) throws(RefusingPortError) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RefusingPortError(step: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(descriptor)
            throw RefusingPortError(step: "address \(host)", code: EINVAL)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw RefusingPortError(step: "bind", code: code)
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            close(descriptor)
            throw RefusingPortError(step: "getsockname", code: code)
        }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}

/// A step of `RefusingPort.init` failed with `errno` `code`.
public struct RefusingPortError: Error, CustomStringConvertible {
    public let step: String
    public let code: Int32
    public var description: String { "refusing port: \(step) failed (errno \(code))" }
}
