package import Foundation
package import WeheCore

/// One WeHeY localization run (protocol.md section 12): the two simultaneous replays, the earlier single-server
/// test they are compared with, and the result once computed.
package struct LocalizationRun: Sendable, Hashable, Codable {
    /// The user who ran it.
    package var userID: String
    /// History counts of the simultaneous replays on server 1 and server 2 (`H+1`, `H+2`); the run's key together
    /// with `userID`.
    package var historyCounts: [Int]
    /// The two servers (addresses or site names), in the same order as `historyCounts`.
    package var servers: [String]
    /// The replay that was run.
    package var replayName: String
    /// The server of the earlier single-server test.
    package var singleServer: String?
    /// The history count of the earlier single-server test.
    package var singleHistoryCount: Int?
    /// When the localization was requested.
    package var requestedAt: Date
    /// The result; `nil` while it is being computed.
    package var summary: LocalizationSummary?

    /// Creates a run.
    package init(
        userID: String,
        historyCounts: [Int],
        servers: [String],
        replayName: String,
        singleServer: String? = nil,
        singleHistoryCount: Int? = nil,
        requestedAt: Date,
        summary: LocalizationSummary? = nil
    ) {
        self.userID = userID
        self.historyCounts = historyCounts
        self.servers = servers
        self.replayName = replayName
        self.singleServer = singleServer
        self.singleHistoryCount = singleHistoryCount
        self.requestedAt = requestedAt
        self.summary = summary
    }
}
