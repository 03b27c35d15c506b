public import Foundation
public import WeheCore

/// The outcome of a WeHeY localization (protocol.md section 12, analysis.md section 6): where the differentiation
/// that a single-server test found is located, or why that could not be decided.
///
/// The flow never accuses the access network without the server's statistics: every failure (no server pair, a
/// replay of the pair failed, a server unreachable, no result in time, a result for another test, no test in the
/// result) ends as `.inconclusive` with a `reason`.
public struct LocalizationResult: Sendable {
    /// The catalog id of the test (`youtube`).
    public var test: String
    /// The original replay that was run on both servers.
    public var replayName: String
    /// The user.
    public var userID: String
    /// The server of the earlier single-server test.
    public var singleServer: String
    /// The history count of the earlier single-server test (`H`).
    public var singleHistoryCount: Int
    /// The two servers of the pair (server 1 computes the localization); empty when there was no pair.
    public var servers: [String]
    /// Fleet only: the located machines of the pair (name, city, country), in server order; empty otherwise.
    public var fleetServers: [FleetTarget] = []
    /// The networks the two paths share, as named by the server (`"AS1 or AS2"`); `nil` without a pair.
    public var sharedNetworks: String?
    /// History counts of the simultaneous tests on server 1 and server 2 (`H+1`, `H+2`); empty without a pair.
    public var historyCounts: [Int]
    /// Each server's own analysis of its simultaneous test (original vs control), in server order, when both
    /// answered.
    public var serverSummaries: [AnalysisSummary]
    /// The verdict.
    public var verdict: LocalizationVerdict
    /// Why the verdict is inconclusive, or why it is "no evidence" without the localization statistics.
    public var reason: LocalizationReason?
    /// The localization statistics returned by server 1, when it returned them.
    public var summary: LocalizationSummary?
    /// Whether the pair's summed throughput looked like the single replay's; `nil` when that test is absent.
    public var throughputSimilar: Bool?
    /// Whether the two branches' losses were correlated; `nil` when that test is absent.
    public var lossCorrelated: Bool?
    /// Wall time of the localization (after the single-server test), seconds.
    public var durationSeconds: Double
    /// When the localization started.
    public var startedAt: Date

    /// Creates a result.
    public init(
        test: String,
        replayName: String,
        userID: String,
        singleServer: String,
        singleHistoryCount: Int,
        servers: [String] = [],
        sharedNetworks: String? = nil,
        historyCounts: [Int] = [],
        serverSummaries: [AnalysisSummary] = [],
        verdict: LocalizationVerdict,
        reason: LocalizationReason? = nil,
        summary: LocalizationSummary? = nil,
        throughputSimilar: Bool? = nil,
        lossCorrelated: Bool? = nil,
        durationSeconds: Double = 0,
        startedAt: Date
    ) {
        self.test = test
        self.replayName = replayName
        self.userID = userID
        self.singleServer = singleServer
        self.singleHistoryCount = singleHistoryCount
        self.servers = servers
        self.sharedNetworks = sharedNetworks
        self.historyCounts = historyCounts
        self.serverSummaries = serverSummaries
        self.verdict = verdict
        self.reason = reason
        self.summary = summary
        self.throughputSimilar = throughputSimilar
        self.lossCorrelated = lossCorrelated
        self.durationSeconds = durationSeconds
        self.startedAt = startedAt
    }
}

/// Why a localization is inconclusive (or ended as "no evidence" before the statistics).
public struct LocalizationReason: Sendable, Hashable, CustomStringConvertible {
    /// The kind of reason.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The server knows no pair of servers whose paths to this client form a Y (or answered no pair we use).
        case noServerPair = "no-server-pair"
        /// A server of the pair (or the server asked for the pair) could not be reached.
        case serverUnreachable = "server-unreachable"
        /// A replay of the simultaneous pair failed.
        case replayFailed = "replay-failed"
        /// A server's analysis of its simultaneous test failed.
        case analysisFailed = "analysis-failed"
        /// The simultaneous tests did not both show differentiation (a "no evidence" verdict).
        case notDifferentiatedOnBoth = "not-differentiated-on-both"
        /// Server 1 refused the localization request.
        case localizeRefused = "localize-refused"
        /// Server 1 had no localization result within the polling bound.
        case resultNotReady = "result-not-ready"
        /// Server 1 answered for another user or other history counts.
        case resultMismatch = "result-mismatch"
        /// The result holds neither test (e.g. too few intervals for the statistics).
        case noTestResults = "no-test-results"
        /// Fleet: the locate service found no server for a site of the pair (or could not be asked).
        case siteNotLocated = "site-not-located"
        /// Fleet: no access envelope of a site's machines opened, or one closed during the localization.
        case envelopeFailed = "envelope-failed"
    }

    /// The kind of reason.
    public var code: Code
    /// One line for people (English; the command line translates the code).
    public var message: String
    /// For the fleet reasons: the fleet error behind it (the command line exits with that error's code).
    public var fleetError: FleetError.Code?

    /// Creates a reason.
    public init(_ code: Code, _ message: String, fleetError: FleetError.Code? = nil) {
        self.code = code
        self.message = message
        self.fleetError = fleetError
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
