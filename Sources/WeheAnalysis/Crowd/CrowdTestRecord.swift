/// One test as the crowd-sourced analysis consumes it: the group it belongs to and either its raw throughput lists or
/// the per-test numbers already computed elsewhere.
public struct CrowdTestRecord: Sendable, Hashable {
    /// What the record carries.
    public enum Measurement: Sendable, Hashable {
        /// Throughput samples, Mbit/s, of the original and the control replay (zeros included, as stored).
        case samples(original: [Double], control: [Double])
        /// Per-test numbers computed earlier (see `CrowdTestScalars`).
        case scalars(CrowdTestScalars)
    }

    /// Provider (ISP or carrier) name; tests are grouped by provider and replay.
    public var provider: String
    /// Replay (app) name.
    public var replay: String
    /// The test's data.
    public var measurement: Measurement

    /// Creates a record.
    public init(provider: String, replay: String, measurement: Measurement) {
        self.provider = provider
        self.replay = replay
        self.measurement = measurement
    }
}
