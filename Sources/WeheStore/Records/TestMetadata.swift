package import Foundation

/// What is known about a test besides its samples: where, when, by which client, on which network.
package struct TestMetadata: Sendable, Hashable, Codable {
    /// Name of the original (app) replay, e.g. `Pandora-05132024`: the "app" dimension of the crowd analysis.
    package var replayName: String
    /// When the test started: the arrival of the original replay (testID 0) once known, else of the first replay.
    package var startedAt: Date
    /// Provider (carrier or ISP) name, e.g. `Verizon (cellular)`; `nil` when unknown.
    package var provider: String?
    /// Network type as reported by the client (`WIFI`, `LTE`, …); `nil` when unknown.
    package var networkType: String?
    /// Client software version (side channel field 8).
    package var clientVersion: String?
    /// Client address. On write: the address as seen; the store keeps only the form allowed by its
    /// `AnonymizationPolicy`. On read: the stored (normally anonymised) form.
    package var clientAddress: String?
    /// The replay server that ran the test (host name or address), for fleets sharing one database.
    package var serverName: String?
    /// The client's `extraString` (side channel field 4).
    package var extraString: String?
    /// The AS number of the client's public address (from an IP-to-AS table); `nil` when unknown.
    package var asNumber: Int?
    /// The AS's organisation name; `nil` when unknown.
    package var asName: String?
    /// `true` when the monitor's schedule started the test (`wehe monitor`); `nil` for a test a person started.
    package var scheduled: Bool?

    /// Creates metadata.
    package init(
        replayName: String,
        startedAt: Date,
        provider: String? = nil,
        networkType: String? = nil,
        clientVersion: String? = nil,
        clientAddress: String? = nil,
        serverName: String? = nil,
        extraString: String? = nil,
        asNumber: Int? = nil,
        asName: String? = nil,
        scheduled: Bool? = nil
    ) {
        self.replayName = replayName
        self.startedAt = startedAt
        self.provider = provider
        self.networkType = networkType
        self.clientVersion = clientVersion
        self.clientAddress = clientAddress
        self.serverName = serverName
        self.extraString = extraString
        self.asNumber = asNumber
        self.asName = asName
        self.scheduled = scheduled
    }
}
