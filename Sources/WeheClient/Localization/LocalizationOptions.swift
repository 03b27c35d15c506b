public import WeheAnalysis

/// Settings of a localization beyond the replay client's: the decision thresholds and how long to wait for
/// server 1's result.
public struct LocalizationOptions: Sendable, Hashable {
    /// Thresholds of the client decision (protocol.md section 12 item 8; defaults 0.05 / 0.05 / 0.5).
    public var rules: LocalizationRules
    /// Wait before the first `localizeResult` query.
    public var firstPollDelay: Duration
    /// Each further wait is the previous one times this factor, at most `maximumPollDelay`.
    public var pollBackoff: Double
    /// Longest wait between two queries.
    public var maximumPollDelay: Duration
    /// `localizeResult` queries at most; then the localization is inconclusive.
    public var pollAttempts: Int
    /// The fleet the pair's servers belong to, when the single test ran through a fleet (M-Lab or an operator's
    /// locate-compatible one): the pair is then one of `getServers`' site pairs, each site is located (`?site=`)
    /// and its machine entered through its access envelope, both held open until the localization ends
    /// (protocol.md sections 10 and 12). `nil` uses `getServers`' address pairs.
    public var fleet: FleetConfiguration?

    /// Creates options with the defaults (about a minute of polling in all).
    public init(
        rules: LocalizationRules = LocalizationRules(),
        firstPollDelay: Duration = .milliseconds(500),
        pollBackoff: Double = 2,
        maximumPollDelay: Duration = .seconds(5),
        pollAttempts: Int = 15,
        fleet: FleetConfiguration? = nil
    ) {
        self.rules = rules
        self.firstPollDelay = firstPollDelay
        self.pollBackoff = pollBackoff
        self.maximumPollDelay = maximumPollDelay
        self.pollAttempts = pollAttempts
        self.fleet = fleet
    }
}
