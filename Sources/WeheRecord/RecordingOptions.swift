public import WeheCore

/// What `wehe record` is asked to do.
public struct RecordingOptions: Sendable {
    /// The recording device's address as it appears in the capture (only its packets are used).
    public var client: String
    /// Test id (letters and digits): the catalog's image name, `wehe run <id>`.
    public var id: String
    /// Display name; the id when `nil`.
    public var displayName: String?
    /// Catalog category (`VIDEO`, `MUSIC`, `CONFERENCING`, `OTHER`).
    public var category: AppCategory = .other
    /// Keep only flows whose TLS server name or HTTP Host is one of these (or a subdomain of one).
    public var serverNames: [String] = []
    /// Keep only flows to these server ports.
    public var ports: [UInt16] = []
    /// Keep only these flows (numbers as the report lists them, in order of first packet).
    public var flowNumbers: [Int] = []
    /// The transport of the test; the one with the most bytes when `nil`.
    public var transport: TransportProtocol?
    /// Drop a flow with cleartext cookies, Authorization headers or query values instead of redacting them.
    public var refuseIdentifying = false
    /// Shorten every idle gap longer than this many seconds to this length.
    public var shortenGaps: Double?
    /// Idle gaps above this many seconds are listed in the report.
    public var gapWarningSeconds: Double = 3
    /// Most payload bytes of the client's flows held in memory.
    public var byteLimit = 1 << 30

    /// Creates options.
    public init(client: String, id: String) {
        self.client = client
        self.id = id
    }

    /// The libpcap filter of a live capture: the client's address, and the chosen transport and ports when given
    /// (either side's port: the flow table then keeps the server side's). A superset of what the recording keeps.
    public var captureFilter: String {
        var terms = ["host \(client)"]
        switch transport {
        case .tcp?: terms.append("tcp")
        case .udp?: terms.append("udp")
        case nil: terms.append("(tcp or udp)")
        }
        if !ports.isEmpty {
            terms.append("(" + ports.map { "port \($0)" }.joined(separator: " or ") + ")")
        }
        return terms.joined(separator: " and ")
    }
}
