public import WeheCore

/// A capture turned into a Wehe test: the client trace and its control, the server side of both, the catalog
/// entry, and the report of what was kept.
public struct Recording: Sendable {
    /// The original client trace (`<id>_<date>.pcap_client_all.json`).
    public var client: ReplayTrace
    /// Its control (`<id>Random_<date>.pcap_client_all.json`), from the project's control generation.
    public var control: ReplayTrace
    /// The server side of the original, with the recorded bytes and pacing.
    public var server: ServerTrace
    /// The server side of the control (the recorded responses inverted the same way).
    public var controlServer: ServerTrace
    /// The catalog entry.
    public var entry: CatalogEntry
    /// What was kept, dropped, redacted, and what a classifier will see.
    public var report: RecordingReport
    /// File stem of the original (`<id>_<MMDDYYYY>`).
    public var stem: String
    /// File stem of the control.
    public var controlStem: String
}
