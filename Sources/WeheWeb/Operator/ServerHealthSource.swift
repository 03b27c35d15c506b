package import Foundation

/// Reports the state of the server the operator dashboard watches (uptime, sessions, queue depth…). The
/// server's composition root provides it; the dashboard adds the database check and the session-log counts.
package protocol ServerHealthSource: Sendable {
    /// The current figures.
    func healthSnapshot() async -> ServerHealthSnapshot
}

/// How healthy one part of the server is.
package enum HealthStatus: String, Sendable, Hashable, Codable, Comparable {
    /// Working normally.
    case ok
    /// Working, with problems worth a look (results queued, errors).
    case degraded
    /// Not working.
    case down

    private var rank: Int {
        switch self {
        case .ok: 0
        case .degraded: 1
        case .down: 2
        }
    }

    /// `ok < degraded < down`.
    package static func < (lhs: HealthStatus, rhs: HealthStatus) -> Bool { lhs.rank < rhs.rank }
}

/// One line of the health panel.
package struct HealthItem: Sendable, Hashable, Codable {
    /// What is measured (`Active sessions`).
    package var name: String
    /// Its value, as text (`3`, `12 ms`).
    package var value: String
    /// Its status.
    package var status: HealthStatus

    /// Creates an item.
    package init(name: String, value: String, status: HealthStatus = .ok) {
        self.name = name
        self.value = value
        self.status = status
    }
}

/// Figures reported by a `ServerHealthSource`.
package struct ServerHealthSnapshot: Sendable, Hashable, Codable {
    /// When the server started, if known.
    package var startedAt: Date?
    /// The figures.
    package var items: [HealthItem]

    /// Creates a snapshot.
    package init(startedAt: Date? = nil, items: [HealthItem]) {
        self.startedAt = startedAt
        self.items = items
    }
}
