/// What a running `ReplayServer` reports about itself (for a health panel).
package struct ReplayServerStatus: Sendable, Hashable {
    /// Whether every listener is bound and serving.
    package var running: Bool
    /// Whether the server stopped admitting sessions (graceful shutdown).
    package var draining: Bool
    /// Sessions admitted now.
    package var sessions: Int
    /// Sessions admitted at most at once.
    package var maximumSessions: Int
    /// Open TCP connections.
    package var connections: Int
    /// Open TCP connections allowed.
    package var maximumConnections: Int
    /// Replays served.
    package var replays: Int
    /// Where the server listens, once running.
    package var ports: ReplayServer.ListeningPorts?

    /// Creates a status.
    package init(
        running: Bool, draining: Bool, sessions: Int, maximumSessions: Int, connections: Int, maximumConnections: Int,
        replays: Int, ports: ReplayServer.ListeningPorts?
    ) {
        self.running = running
        self.draining = draining
        self.sessions = sessions
        self.maximumSessions = maximumSessions
        self.connections = connections
        self.maximumConnections = maximumConnections
        self.replays = replays
        self.ports = ports
    }
}
