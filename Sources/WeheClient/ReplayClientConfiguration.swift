public import Logging
public import WeheAnalysis
public import WeheCore
package import WeheStore
public import WeheWire

/// Everything a `ReplayClient` needs: where the server is, how to trust it, who the user is, how to decide.
/// Plain values with the published clients' defaults, plus injected dependencies (history counter, store, logger).
public struct ReplayClientConfiguration: Sendable {
    /// Server host name or IP literal. Resolved once per test; every connection then uses the address.
    public var server: String
    /// Side-channel port (55556 with TLS, 55555 without).
    public var sideChannelPort: Int
    /// Whether the side channel uses TLS.
    public var sideChannelTLS: Bool
    /// Analyzer port (56566 with TLS, 56565 without).
    public var analyzerPort: Int
    /// Whether the analyzer uses HTTPS.
    public var analyzerTLS: Bool
    /// PEM text of the certificate(s) to trust (the Wehe CA for the published servers, or our server's own
    /// certificate). `nil` trusts the system's roots. Host names are never checked (servers are reached by IP).
    public var trustedCertificatesPEM: String?
    /// The per-installation user id (10 characters, e.g. `@` and 9 of `[0-9a-z]`).
    public var userID: String
    /// Field 4 of the ID declaration (`"0"` like the command-line client without M-Lab).
    public var extraString: String
    /// Field 8 of the ID declaration.
    public var clientVersion: String
    /// The decision rule and thresholds.
    public var verdictRules: VerdictRules
    /// Whether differentiation or inconclusive results are confirmed by a second complete test.
    public var confirmation: Bool
    /// The fewest positive throughput samples each replay needs for "no differentiation"; with fewer, a test the
    /// rule does not find differentiated is inconclusive ("too few measurements"), as our server decides
    /// (`DifferentiationConfiguration.minimumPositiveSamples`).
    public var minimumPositiveSamples = DifferentiationConfiguration.defaultMinimumPositiveSamples
    /// Whether every UDP replay of a test is followed by the report of the datagrams that arrived (`udpLoss`, our
    /// analyzer extension; the server then keeps the replay's loss timeline). Localization always reports its
    /// simultaneous originals; single tests do not unless this is set (the testbed's loss check sets it).
    public var reportsDatagrams = false
    /// Order of the two replays of a test.
    public var replayOrder: ReplayOrder
    /// Public-address discovery with `WHATSMYIPMAN` before TCP replays.
    public var addressDiscovery: AddressDiscovery
    /// Timeouts and polling.
    public var timing: Timing
    /// Hands out history counts.
    public var historyCounter: any HistoryCounter
    /// Where finished tests are recorded (the person's history); `nil` keeps nothing.
    package var store: (any ResultStore)?
    /// Whether the monitor's schedule starts these tests: stored with each result (`wehe monitor`).
    package var scheduled = false
    /// Where the client logs.
    public var logger: Logger
    /// The client's own IP-to-AS table, used when the server answers no AS (`--asn-prefixes`, `--asn-names`).
    public var asTable: ASTable?
    /// The provider name the person gives (`--provider`): shown and stored instead of the AS name.
    public var providerName: String?
    /// Finds the link kind towards the server; `nil` records `unknown`.
    public var linkKindDetector: LinkKindDetector? = LinkKindDetector()
    /// Recorded tests sent to a server that does not have them; `nil` sends none.
    public var clientTraceUpload: ClientTraceUpload?

    /// Creates a configuration with the published clients' defaults.
    public init(
        server: String,
        userID: String,
        trustedCertificatesPEM: String? = nil,
        sideChannelPort: Int = 55556,
        sideChannelTLS: Bool = true,
        analyzerPort: Int = 56566,
        analyzerTLS: Bool = true,
        extraString: String = "0",
        clientVersion: String = WeheVersion.declaredClientVersion,
        verdictRules: VerdictRules = .android,
        confirmation: Bool = true,
        replayOrder: ReplayOrder = .random,
        addressDiscovery: AddressDiscovery = .automatic,
        timing: Timing = Timing(),
        historyCounter: any HistoryCounter = InMemoryHistoryCounter(),
        logger: Logger = Logger(label: "wehe.client")
    ) {
        self.server = server
        self.userID = userID
        self.trustedCertificatesPEM = trustedCertificatesPEM
        self.sideChannelPort = sideChannelPort
        self.sideChannelTLS = sideChannelTLS
        self.analyzerPort = analyzerPort
        self.analyzerTLS = analyzerTLS
        self.extraString = extraString
        self.clientVersion = clientVersion
        self.verdictRules = verdictRules
        self.confirmation = confirmation
        self.replayOrder = replayOrder
        self.addressDiscovery = addressDiscovery
        self.timing = timing
        self.historyCounter = historyCounter
        self.store = nil
        self.logger = logger
    }

    /// Which replay of a test runs first.
    public enum ReplayOrder: Sendable, Hashable {
        /// A coin flip per test, as every published client does.
        case random
        /// The original first (tests).
        case originalFirst
        /// The control first (tests).
        case controlFirst
    }

    /// When to ask the server for the client's public address (protocol.md section 4).
    public enum AddressDiscovery: Sendable, Hashable {
        /// Before each TCP replay on the replay's recorded port, except when the server is a loopback address.
        /// A port test whose port does not answer counts as blocked.
        case automatic
        /// Always, also on loopback.
        case always
        /// Never (`realIP` is `127.0.0.1`).
        case never
    }

    /// Timeouts, retries and polling.
    public struct Timing: Sendable, Hashable {
        /// TCP connect timeout (side channel, replay, analyzer).
        public var connect: Duration
        /// Longest wait for one side-channel message (60 s, the Java client's read timeout).
        public var sideChannelRead: Duration
        /// Longest silence on a replay connection while a response is awaited (30 s).
        public var replayIdle: Duration
        /// Timeout of one analyzer or `WHATSMYIPMAN` request (8 s).
        public var httpRequest: Duration
        /// Attempts of the `analyze` POST when no answer comes back (3).
        public var analyzeAttempts: Int
        /// Wait before the first `singleResult` query.
        public var firstPollDelay: Duration
        /// `singleResult` queries at most (12); also how often a DPI search's request is asked while the analyzer
        /// answers 503, with the same pauses.
        public var pollAttempts: Int
        /// Back-off: each wait is the previous times this factor, at most `maximumPollDelay`.
        public var pollBackoff: Double
        /// Longest wait between two queries.
        public var maximumPollDelay: Duration
        /// `WHATSMYIPMAN` attempts before a port counts as blocked (3; Java tries 5).
        public var addressAttempts: Int
        /// Pause between two `WHATSMYIPMAN` attempts (1 s).
        public var addressRetryDelay: Duration
        /// UDP: longest wait after the last datagram for the server's flows to report `DONE`, within the deadline.
        public var udpDrain: Duration
        /// Overrides the replay deadlines (45/40/30 s) for tests; `nil` uses the protocol's values.
        public var replayDeadline: Duration?

        /// Creates timing settings with the defaults.
        public init(
            connect: Duration = .seconds(5),
            sideChannelRead: Duration = .seconds(60),
            replayIdle: Duration = .seconds(30),
            httpRequest: Duration = .seconds(8),
            analyzeAttempts: Int = 3,
            firstPollDelay: Duration = .milliseconds(300),
            pollAttempts: Int = 12,
            pollBackoff: Double = 2,
            maximumPollDelay: Duration = .seconds(4),
            addressAttempts: Int = 3,
            addressRetryDelay: Duration = .seconds(1),
            udpDrain: Duration = .seconds(5),
            replayDeadline: Duration? = nil
        ) {
            self.connect = connect
            self.sideChannelRead = sideChannelRead
            self.replayIdle = replayIdle
            self.httpRequest = httpRequest
            self.analyzeAttempts = analyzeAttempts
            self.firstPollDelay = firstPollDelay
            self.pollAttempts = pollAttempts
            self.pollBackoff = pollBackoff
            self.maximumPollDelay = maximumPollDelay
            self.addressAttempts = addressAttempts
            self.addressRetryDelay = addressRetryDelay
            self.udpDrain = udpDrain
            self.replayDeadline = replayDeadline
        }
    }
}
