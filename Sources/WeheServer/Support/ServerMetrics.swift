import CoreMetrics
import Metrics

/// The server's Prometheus metrics (ARCHITECTURE.md 6): sessions, bytes, verdicts, errors, replay timing.
/// Created through swift-metrics, so they go wherever the executable bootstrapped the metrics system (a no-op
/// in tests).
package struct ServerMetrics: Sendable {
    /// Admission decisions by result.
    package func admission(_ result: String) {
        Counter(label: "wehe_admissions_total", dimensions: [("result", result)]).increment()
    }
    /// Connections by listener kind.
    package func connectionAccepted(_ kind: String) {
        Counter(label: "wehe_connections_total", dimensions: [("kind", kind)]).increment()
    }
    /// Connections closed at once because the connection cap was reached.
    package func connectionRejected(_ kind: String) {
        Counter(label: "wehe_connections_rejected_total", dimensions: [("kind", kind)]).increment()
    }
    /// Connections closed for a protocol error or timeout.
    package func connectionFailed(_ kind: String, reason: String) {
        Counter(label: "wehe_connection_errors_total", dimensions: [("kind", kind), ("reason", reason)]).increment()
    }
    /// Replay payload bytes sent to clients.
    package func bytesSent(_ count: Int, transport: String) {
        Counter(label: "wehe_replay_bytes_sent_total", dimensions: [("transport", transport)]).increment(by: count)
    }
    /// Replays whose samples were stored.
    package func replayCompleted() { Counter(label: "wehe_replays_completed_total").increment() }
    /// Analyses computed, by verdict.
    package func verdict(_ verdict: String) {
        Counter(label: "wehe_analyses_total", dimensions: [("verdict", verdict)]).increment()
    }
    /// Sessions running now.
    package func activeSessions(_ count: Int) { Gauge(label: "wehe_active_sessions").record(count) }
    /// How late a request group's last byte arrived versus the trace's schedule.
    package func requestLateness(seconds: Double) {
        Recorder(label: "wehe_request_arrival_lateness_seconds").record(seconds)
    }
    /// Delay between a complete request and the first byte of its response burst.
    package func responseDelay(seconds: Double) {
        Recorder(label: "wehe_response_send_delay_seconds").record(seconds)
    }
    /// Creates the metrics front.
    package init() {}
}
