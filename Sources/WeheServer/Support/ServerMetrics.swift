package import CoreMetrics
import Metrics
package import Prometheus

/// The server's Prometheus metrics (ARCHITECTURE.md 6): sessions, bytes, verdicts, errors, replay timing.
///
/// Created through swift-metrics: with a registry, in it through `PrometheusHelpFactory` (every metric with its
/// HELP text); without one, wherever the executable bootstrapped the metrics system (a no-op in tests).
package struct ServerMetrics: Sendable {
    /// HELP text of every metric, by name (the exposition's `# HELP` lines).
    package static let help: [String: String] = [
        "wehe_admissions_total": "Side-channel admission decisions, by result (granted or the refusal).",
        "wehe_connections_total": "TCP connections accepted, by listener kind.",
        "wehe_connections_rejected_total": "TCP connections closed at once because the connection cap was reached.",
        "wehe_connection_errors_total": "Connections closed for a protocol error or a timeout, by kind and reason.",
        "wehe_connections_unused_total":
            "Side channels the client closed before sending a byte (opened ahead and not needed), by kind.",
        "wehe_replay_bytes_sent_total": "Replay payload bytes sent to clients, by transport.",
        "wehe_replays_completed_total": "Replays whose throughput samples were stored.",
        "wehe_analyses_total": "Differentiation analyses computed, by verdict.",
        "wehe_active_sessions": "Sessions admitted now.",
        "wehe_file_write_failures_total":
            "Packet captures (kind pcap) and archive files (kind archive) not written, by the step that failed.",
        "wehe_request_arrival_lateness_seconds":
            "Timed TCP replays only: how late each request group's last byte arrived versus the trace's schedule, "
            + "seconds (the earliest group of a replay is 0).",
        "wehe_response_send_delay_seconds":
            "Delay between a complete request group and the first byte of its response burst, seconds.",
    ]

    /// Histogram buckets of the value histograms, by name.
    package static let buckets: [String: [Double]] = {
        let lateness = [-1, -0.1, -0.01, -0.001, 0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5]
        return ["wehe_request_arrival_lateness_seconds": lateness, "wehe_response_send_delay_seconds": lateness]
    }()

    private let factory: (any MetricsFactory)?

    /// Creates the metrics front: in `registry` when given, else through the bootstrapped metrics system.
    package init(registry: PrometheusCollectorRegistry? = nil) {
        factory = registry.map { PrometheusHelpFactory(registry: $0) }
    }

    /// Admission decisions by result.
    package func admission(_ result: String) {
        counter("wehe_admissions_total", [("result", result)]).increment()
    }
    /// Connections by listener kind.
    package func connectionAccepted(_ kind: String) {
        counter("wehe_connections_total", [("kind", kind)]).increment()
    }
    /// Connections closed at once because the connection cap was reached.
    package func connectionRejected(_ kind: String) {
        counter("wehe_connections_rejected_total", [("kind", kind)]).increment()
    }
    /// Connections closed for a protocol error or timeout.
    package func connectionFailed(_ kind: String, reason: String) {
        counter("wehe_connection_errors_total", [("kind", kind), ("reason", reason)]).increment()
    }
    /// Side channels the client closed before sending anything.
    package func connectionUnused(_ kind: String) {
        counter("wehe_connections_unused_total", [("kind", kind)]).increment()
    }
    /// Replay payload bytes sent to clients.
    package func bytesSent(_ count: Int, transport: String) {
        counter("wehe_replay_bytes_sent_total", [("transport", transport)]).increment(by: count)
    }
    /// Replays whose samples were stored.
    package func replayCompleted() { counter("wehe_replays_completed_total").increment() }
    /// Analyses computed, by verdict.
    package func verdict(_ verdict: String) {
        counter("wehe_analyses_total", [("verdict", verdict)]).increment()
    }
    /// A packet capture or archive file that was not written (`kind` pcap or archive; `stage` the step that failed:
    /// open, write, rename, path, pending).
    package func fileWriteFailed(_ kind: String, stage: String) {
        counter("wehe_file_write_failures_total", [("kind", kind), ("stage", stage)]).increment()
    }
    /// A test's packet capture on the interface started.
    package func captureStarted() { counter("wehe_captures_total", [("outcome", "started")]).increment() }
    /// A test ran without its packet capture (libpcap, permission or a bound of captures at once).
    package func captureUnavailable() { counter("wehe_captures_total", [("outcome", "unavailable")]).increment() }
    /// Sessions running now.
    package func activeSessions(_ count: Int) {
        let label = "wehe_active_sessions"
        (factory.map { CoreMetrics.Gauge(label: label, factory: $0) } ?? CoreMetrics.Gauge(label: label)).record(count)
    }
    /// How late a request group's last byte arrived versus the trace's schedule (timed replays only: an untimed
    /// replay has no schedule to be late against).
    package func requestLateness(seconds: Double) {
        recorder("wehe_request_arrival_lateness_seconds").record(seconds)
    }
    /// Delay between a complete request and the first byte of its response burst.
    package func responseDelay(seconds: Double) {
        recorder("wehe_response_send_delay_seconds").record(seconds)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
        factory.map { CoreMetrics.Counter(label: label, dimensions: dimensions, factory: $0) }
            ?? CoreMetrics.Counter(label: label, dimensions: dimensions)
    }

    private func recorder(_ label: String) -> CoreMetrics.Recorder {
        factory.map { CoreMetrics.Recorder(label: label, factory: $0) } ?? CoreMetrics.Recorder(label: label)
    }
}

/// A swift-metrics factory over a Prometheus registry that gives every metric its HELP text
/// (`ServerMetrics.help`; a metric of another library gets a line naming it as such) and the histogram buckets of
/// `ServerMetrics.buckets`. The Prometheus package's own factory registers every metric without HELP.
package struct PrometheusHelpFactory: MetricsFactory {
    /// The registry the metrics live in.
    package let registry: PrometheusCollectorRegistry

    /// Creates the factory over `registry`.
    package init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    /// The HELP text of a metric name.
    package static func help(_ label: String) -> String {
        ServerMetrics.help[label] ?? "\(label): reported by a library of wehe-server (no description of its own)."
    }

    /// The metric's name with its HELP text.
    static func name(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: help(label))
    }

    static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10),
    ]

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: Self.name(label), labels: dimensions)
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
        -> any FloatingPointCounterHandler
    {
        registry.makeCounter(descriptor: Self.name(label), labels: dimensions)
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: Self.name(label), labels: dimensions) }
        let buckets = ServerMetrics.buckets[label] ?? [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
        return registry.makeValueHistogram(descriptor: Self.name(label), labels: dimensions, buckets: buckets)
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: Self.name(label), labels: dimensions)
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: Self.name(label), labels: dimensions, buckets: Self.durationBuckets)
    }

    package func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? Histogram<Double> { registry.unregisterValueHistogram(histogram) }
    }

    package func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    package func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? Histogram<Duration> { registry.unregisterDurationHistogram(histogram) }
    }
}
