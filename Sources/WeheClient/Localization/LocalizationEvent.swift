public import WeheCore
public import WeheReplay

/// Progress of a localization, delivered to the handler given to `LocalizationClient.localize`.
public enum LocalizationEvent: Sendable {
    /// Fleet only: both sites of the pair were located and both machines' access envelopes are open, server 1's
    /// first; they stay open until the localization ends.
    case pairEntered([FleetTarget])
    /// The server pair was chosen and the two history counts taken.
    case pairSelected(servers: [String], sharedNetworks: String, historyCounts: [Int])
    /// The same replay starts on both servers at once.
    case replaysStarted(role: ReplayRole, replayName: String)
    /// About once per sample interval per server while the simultaneous replays run (`server` is 0 or 1).
    case replayProgress(server: Int, role: ReplayRole, progress: ReplayProgress)
    /// One server's replay finished and its samples were accepted.
    case replayFinished(server: Int, role: ReplayRole, outcome: ReplayOutcome)
    /// Both servers' own verdicts on their simultaneous tests.
    case serverVerdicts([Verdict])
    /// The localization was requested from server 1.
    case localizationRequested(server: String)
    /// Server 1 had no result yet at this query (1-based).
    case waitingForResult(attempt: Int)
    /// The localization is complete (already stored when a store is configured).
    case finished(LocalizationResult)
}
