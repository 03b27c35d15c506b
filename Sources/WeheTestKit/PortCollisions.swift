/// Tests that reuse one port number on a second loopback address (a server pair, a proxy standing in front of a
/// server) can find it taken there: the number was free on the first address only, and the parallel suite keeps
/// many sockets open on 127.0.0.1. Such a start fails with "Address already in use"; these helpers start over.
public enum PortCollisions {
    /// Whether `error`, or the error it wraps (as described in its text), is a bind to an address in use.
    public static func isCollision(_ error: any Error) -> Bool {
        let text = String(describing: error)
        return text.contains("Address already in use") || text.contains("EADDRINUSE")
    }

    /// Runs `body` up to `attempts` times while it fails with a port collision; any other outcome is final.
    /// `body` must release everything it started before it throws.
    public static func retrying<T>(attempts: Int = 5, _ body: () async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch {
                guard attempt < attempts, isCollision(error) else { throw error }
                attempt += 1
            }
        }
    }
}
