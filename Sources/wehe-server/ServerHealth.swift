import Foundation
import WeheServer
import WeheWeb

/// The operator dashboard's health panel fed by the running `ReplayServer`: whether it serves, its sessions
/// and connections against their limits, and the replays it offers.
struct ServerHealth: ServerHealthSource {
    /// The server watched.
    let server: ReplayServer
    /// When `wehe-server serve` started.
    let startedAt: Date

    func healthSnapshot() async -> ServerHealthSnapshot {
        let status = await server.status()
        let state: (String, HealthStatus) =
            status.running
            ? (status.draining ? ("shutting down", .degraded) : ("serving", .ok)) : ("not running", .down)
        var items = [
            HealthItem(name: "Replay server", value: state.0, status: state.1),
            HealthItem(
                name: "Active sessions", value: "\(status.sessions) of \(status.maximumSessions)",
                status: Self.load(status.sessions, of: status.maximumSessions)),
            HealthItem(
                name: "Open TCP connections", value: "\(status.connections) of \(status.maximumConnections)",
                status: Self.load(status.connections, of: status.maximumConnections)),
        ]
        if let ports = status.ports {
            items.append(HealthItem(name: "Replays served", value: "\(status.replays)"))
            let listeners = [
                ports.sideChannelTLS.map { "side channel TLS \($0)" },
                ports.sideChannelPlain.map { "side channel \($0)" },
                ports.analyzerTLS.map { "analyzer HTTPS \($0)" }, ports.analyzerPlain.map { "analyzer HTTP \($0)" },
                "\(ports.tcp.count) TCP and \(ports.udp.count) UDP replay ports",
            ].compactMap { $0 }
            items.append(HealthItem(name: "Listeners", value: listeners.joined(separator: " · ")))
        }
        return ServerHealthSnapshot(startedAt: startedAt, items: items)
    }

    /// Degraded from 90 % of a limit.
    static func load(_ value: Int, of maximum: Int) -> HealthStatus {
        maximum > 0 && value * 10 >= maximum * 9 ? .degraded : .ok
    }
}
