/// The network a test was measured on: the autonomous system (AS) of the public address, the name a person gave
/// it, and the kind of link the operating system reports.
public struct NetworkProvider: Sendable, Hashable, Codable {
    /// The kind of link to the server, as the operating system reports it.
    public enum LinkKind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Wireless LAN.
        case wifi
        /// Ethernet or another physical wired interface.
        case wired
        /// A mobile broadband (WWAN) modem.
        case cellular
        /// Not known (a virtual interface, loopback, or another operating system).
        case unknown
    }

    /// Where the AS came from.
    public enum Source: String, Sendable, Hashable, Codable {
        /// The replay server's table (its answer to this client about its own address).
        case server
        /// The client's own table.
        case local
    }

    /// The AS number of the public address, when a table knows it.
    public var asNumber: UInt32?
    /// The AS's organisation name, when the names file lists it.
    public var asName: String?
    /// Where the AS came from, when known.
    public var asSource: Source?
    /// The provider name given by the person (`--provider`); shown instead of the AS name.
    public var providerOverride: String?
    /// The kind of link.
    public var linkKind: LinkKind

    /// Creates a description.
    public init(
        asNumber: UInt32? = nil,
        asName: String? = nil,
        asSource: Source? = nil,
        providerOverride: String? = nil,
        linkKind: LinkKind = .unknown
    ) {
        self.asNumber = asNumber
        self.asName = asName
        self.asSource = asSource
        self.providerOverride = providerOverride
        self.linkKind = linkKind
    }

    /// The provider as people read it: `Name (AS64500)` with the override or else the AS name, `AS64500` without a
    /// name, the override alone without an AS; `nil` when nothing is known. The same text goes into the history's
    /// provider column, so the dashboards show it too.
    public var displayName: String? {
        let name = providerOverride.flatMap { $0.isEmpty ? nil : $0 } ?? asName.flatMap { $0.isEmpty ? nil : $0 }
        switch (name, asNumber) {
        case (let name?, let number?): return "\(name) (AS\(number))"
        case (let name?, nil): return name
        case (nil, let number?): return "AS\(number)"
        case (nil, nil): return nil
        }
    }
}
