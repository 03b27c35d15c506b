/// How the client finds a server of a fleet and enters it: the locate service (M-Lab's locate v2 or an operator's
/// compatible service) and the access envelope it names (protocol.md section 10).
public struct FleetConfiguration: Sendable, Hashable {
    /// The published clients' default server name, which they take to mean "use M-Lab".
    public static let publishedDefaultServer = "wehe4.meddle.mobi"
    /// M-Lab's locate service.
    public static let defaultLocateURL = "https://locate.measurementlab.net"
    /// The locate path for Wehe replay servers.
    public static let locatePath = "/v2/nearest/wehe/replay"
    /// The locate path for priority access (a bearer token from M-Lab's token exchange).
    public static let priorityLocatePath = "/v2/priority/nearest/wehe/replay"
    /// The name this client gives locate (`client_name`): locate copies every `client_*` parameter into the
    /// service URLs and labels its rate limiting by it.
    public static let clientName = "wehe-swift"
    /// The operating system named to locate (`client_os`).
    public static var clientOS: String {
        #if os(Linux)
            "linux"
        #elseif os(macOS)
            "macos"
        #elseif os(iOS)
            "ios"
        #elseif os(Windows)
            "windows"
        #else
            "other"
        #endif
    }
    /// How long M-Lab's access tokens are valid after the locate answer (1 minute).
    public static let defaultTokenLifetime: Duration = .seconds(60)
    /// How long M-Lab's envelope holds a Wehe client's access at most: max(token expiry, open + 10 minutes).
    public static let defaultEnvelopeDeadline: Duration = .seconds(600)
    /// Locate's requests per hour for one address and User-Agent (its code's default).
    public static let defaultLocateRequestsPerHour = 40
    /// The key of the access envelope's URL in a target's `urls`.
    public static let envelopeKey = "wss://:4443/v0/envelope/access"
    /// The prefix of the side-channel host name: the machine name with this prefix.
    public static let sideChannelPrefix = "wehe-"

    /// Base URL of the locate service (`https://…` or `http://…`, no path).
    public var locateURL: String
    /// PEM certificate(s) trusted in addition to the system's trust store, for the locate service and the access
    /// envelopes (an operator's private fleet, tests). Host names are checked there, as for any web service.
    public var additionalTrustPEM: String?
    /// Sites to ask for (`?site=`); empty asks for the nearest servers.
    public var sites: [String]
    /// Longest wait for the locate answer (connection and body).
    public var locateTimeout: Duration
    /// Longest wait for an access envelope to open (the command-line client allows 5 s).
    public var envelopeTimeout: Duration
    /// Host name → address, used instead of DNS for the side-channel hosts and envelope hosts named here
    /// (curl's `--resolve`; for fleets without DNS names and for loopback tests).
    public var addressOverrides: [String: String]
    /// A priority-access token (`--locate-token-file`): locate is asked at `priorityLocatePath` with
    /// `Authorization: Bearer <token>`.
    public var priorityToken: String?
    /// How long the access tokens of a locate answer are valid from its arrival.
    public var tokenLifetime: Duration = FleetConfiguration.defaultTokenLifetime
    /// The longest an envelope is held open: a test (with its confirmation) must fit in it.
    public var envelopeDeadline: Duration = FleetConfiguration.defaultEnvelopeDeadline
    /// Locate calls allowed per hour (M-Lab's limit per address and User-Agent).
    public var locateRequestsPerHour: Int = FleetConfiguration.defaultLocateRequestsPerHour

    /// Creates a configuration with the published clients' defaults.
    public init(
        locateURL: String = FleetConfiguration.defaultLocateURL,
        additionalTrustPEM: String? = nil,
        sites: [String] = [],
        locateTimeout: Duration = .seconds(10),
        envelopeTimeout: Duration = .seconds(5),
        addressOverrides: [String: String] = [:]
    ) {
        self.locateURL = locateURL
        self.additionalTrustPEM = additionalTrustPEM
        self.sites = sites
        self.locateTimeout = locateTimeout
        self.envelopeTimeout = envelopeTimeout
        self.addressOverrides = addressOverrides
    }

    /// Whether a server setting means "use the fleet" (the published default name).
    public static func meansFleet(_ server: String) -> Bool {
        server.lowercased() == publishedDefaultServer
    }
}
