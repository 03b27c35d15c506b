/// What a server that runs client-brought recorded tests (`wehe-server serve --accept-client-traces`) accepts, and
/// for how long it keeps them. Off unless the operator turns it on: `ReplayServerConfiguration.clientTraces` is then
/// this policy.
///
/// Every bound is a cost a client could otherwise impose: the upload's size (memory while it is parsed and held),
/// the bytes and time the replay moves, the flows and packets it schedules, how many uploads one network makes per
/// rolling window and holds at once, and the disk of the operator's optional archive of them.
package struct ClientTracePolicy: Sendable, Hashable {
    /// Largest upload (the `*.pcap_client_all.json` text, bytes); larger bodies are refused with 413 before they are
    /// read whole.
    package var maximumUploadBytes = 50 * 1024 * 1024
    /// Largest number of bytes one replay of an uploaded trace moves, client payload plus the response bytes the
    /// server sends (the trace's `response_len` total): the server sends those to the uploader.
    package var maximumReplayBytes = 200 * 1024 * 1024
    /// Longest replay (the trace's last packet time, seconds).
    package var maximumDurationSeconds = 120.0
    /// Most flows (TCP connections or UDP flows) in one uploaded trace.
    package var maximumFlows = 16
    /// Most packets in one uploaded trace.
    package var maximumPackets = 100_000
    /// Uploads one client network (IPv4 /24, IPv6 /64) may make per `uploadWindow`; a test is two (its original
    /// and its control).
    package var uploadsPerNetwork = 40
    /// The rolling window of `uploadsPerNetwork`.
    package var uploadWindow: Duration = .seconds(86_400)
    /// Uploads one client network may hold at once (not yet replayed, not yet expired).
    package var heldPerNetwork = 4
    /// Uploads the whole server holds at once.
    package var heldTotal = 64
    /// How long an upload waits for its replay; it is dropped afterwards, and as soon as a replay takes it.
    package var lifetime: Duration = .seconds(600)
    /// Where uploads are also written, when the operator keeps them (`--keep-client-traces`); `nil`: never written.
    package var keepDirectory: String?
    /// Largest total size of the files in `keepDirectory`; an upload that would pass it is not written (it still
    /// runs).
    package var keepDiskBudgetBytes = 1 << 30

    /// The defaults above.
    package init() {}
}
