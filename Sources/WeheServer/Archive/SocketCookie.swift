import NIOCore

/// The kernel's socket cookie (`SO_COOKIE`, Linux ≥ 4.12): a 64-bit number unique per socket while the system runs,
/// from which M-Lab's uuid convention forms `measurementUUID` (`<prefix>_<16 upper-case hex digits>`).
enum SocketCookie {
    /// The cookie of `channel`'s socket; `nil` where the platform or channel has none.
    static func read(_ channel: any Channel) async -> UInt64? {
        #if os(Linux)
            guard let provider = channel as? any SocketOptionProvider else { return nil }
            let future: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
                level: .socket, name: NIOBSDSocket.Option(rawValue: 57))
            return try? await future.get()
        #else
            return nil
        #endif
    }

    /// `<prefix>_<cookie as 16 upper-case hex digits>`; a random number stands in for a missing cookie.
    static func measurementUUID(prefix: String, cookie: UInt64?) -> String {
        let value = cookie ?? UInt64.random(in: 1...UInt64.max)
        let hex = String(value, radix: 16, uppercase: true)
        return "\(prefix)_" + String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }
}
