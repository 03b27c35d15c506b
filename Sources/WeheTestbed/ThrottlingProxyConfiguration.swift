/// Everything a ``ThrottlingProxy`` needs: where to listen, where to relay to, which flows to throttle and how.
///
/// The proxy is a middlebox on loopback (or any local address): a client connects to a route's `listen`
/// endpoint, the proxy opens a flow to the route's `upstream` endpoint and relays bytes (TCP) or datagrams (UDP)
/// both ways. A flow is *matched* when the ``Classifier`` says so; matched flows are shaped by a token bucket
/// (``Shaping``), optionally only after a number of bytes (delayed throttling), and optionally suffer loss.
public struct ThrottlingProxyConfiguration: Sendable {
    /// The transport of a route.
    public enum Transport: String, Sendable, Hashable, CaseIterable {
        /// A TCP relay: one upstream connection per accepted client connection.
        case tcp
        /// A UDP relay: one upstream socket per client address (host and port).
        case udp
    }

    /// A host and a port. The host is an IP literal or a name (`127.0.0.1`, `::1`, `localhost`).
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        /// The host.
        public var host: String
        /// The port; 0 for a listening endpoint lets the system choose.
        public var port: Int

        /// Creates an endpoint.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Parses `host:port`, `[v6]:port`, or a bare `port` (host `127.0.0.1`).
        public init(parsing text: String) throws(WeheTestbedError) {
            func port(_ digits: Substring) throws(WeheTestbedError) -> Int {
                guard let value = Int(digits), (0...65535).contains(value) else {
                    throw WeheTestbedError(.invalidArgument, "'\(text)' has no valid port (0-65535)")
                }
                return value
            }
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else {
                    throw WeheTestbedError(.invalidArgument, "'\(text)' is not [address]:port")
                }
                host = String(text[text.index(after: text.startIndex)..<close])
                self.port = try port(text[text.index(close, offsetBy: 2)...])
            } else if let colon = text.lastIndex(of: ":") {
                guard text.firstIndex(of: ":") == colon else {
                    throw WeheTestbedError(.invalidArgument, "'\(text)': write IPv6 addresses as [address]:port")
                }
                host = String(text[..<colon])
                self.port = try port(text[text.index(after: colon)...])
            } else {
                host = "127.0.0.1"
                self.port = try port(Substring(text))
            }
            guard !host.isEmpty else { throw WeheTestbedError(.invalidArgument, "'\(text)' has an empty host") }
        }

        /// `host:port`, IPv6 hosts in brackets.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// One relay: connections or datagrams arriving at `listen` are forwarded to `upstream`.
    public struct Route: Sendable, Hashable, CustomStringConvertible {
        /// TCP or UDP.
        public var transport: Transport
        /// Where the proxy listens.
        public var listen: Endpoint
        /// Where the proxy relays to (the real server).
        public var upstream: Endpoint
        /// Whether flows of this route are classified at all. A relayed control channel (for instance Wehe's
        /// side channel) sets this to `false`: it is relayed unchanged and never throttled.
        public var isClassified: Bool

        /// Creates a route.
        public init(_ transport: Transport, listen: Endpoint, upstream: Endpoint, isClassified: Bool = true) {
            self.transport = transport
            self.listen = listen
            self.upstream = upstream
            self.isClassified = isClassified
        }

        /// Parses `tcp:LISTEN=UPSTREAM` or `udp:LISTEN=UPSTREAM` (endpoints as in ``Endpoint/init(parsing:)``);
        /// a trailing `,plain` marks the route as never classified.
        public init(parsing text: String) throws(WeheTestbedError) {
            var body = Substring(text)
            var classified = true
            if body.hasSuffix(",plain") {
                classified = false
                body = body.dropLast(",plain".count)
            }
            guard let colon = body.firstIndex(of: ":"),
                let transport = Transport(rawValue: String(body[..<colon]).lowercased())
            else {
                throw WeheTestbedError(.invalidArgument, "route '\(text)' must start with tcp: or udp:")
            }
            let ends = body[body.index(after: colon)...].split(separator: "=", omittingEmptySubsequences: false)
            guard ends.count == 2 else {
                throw WeheTestbedError(.invalidArgument, "route '\(text)' must be PROTO:LISTEN=UPSTREAM")
            }
            self.init(
                transport,
                listen: try Endpoint(parsing: String(ends[0])),
                upstream: try Endpoint(parsing: String(ends[1])),
                isClassified: classified
            )
        }

        /// `tcp:127.0.0.1:9443=127.0.0.1:443` (with `,plain` for unclassified routes).
        public var description: String {
            "\(transport.rawValue):\(listen)=\(upstream)" + (isClassified ? "" : ",plain")
        }
    }

    /// Which flows are throttled.
    public enum Classifier: Sendable, Hashable {
        /// Every flow of a classified route is matched (a throttled link).
        case everything
        /// No flow is matched (a transparent relay: the control condition).
        case nothing
        /// A flow is matched when one of these byte strings occurs within the first ``inspectedBytes`` of either
        /// direction (like a DPI box looking for a TLS SNI or an HTTP Host header). Patterns split across reads
        /// are found: the inspected prefix is searched as one byte string.
        case patterns([[UInt8]])
        /// A flow is matched when the route's upstream (server) port is one of these (port-based shaping).
        case serverPorts(Set<Int>)
    }

    /// The directions a token bucket applies to.
    public struct Directions: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: Int
        /// Creates directions from raw bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Server to client (what Wehe measures).
        public static let download = Directions(rawValue: 1)
        /// Client to server.
        public static let upload = Directions(rawValue: 2)
        /// Both directions, each with its own bucket.
        public static let both: Directions = [.download, .upload]
    }

    /// Whether matched flows share one bucket per direction or each flow has its own.
    public enum BucketScope: String, Sendable, Hashable {
        /// One bucket per direction for all matched flows together, like an ISP's per-application shaper (and
        /// like the kernel testbed's HTB class).
        case aggregate
        /// One bucket per flow and direction.
        case perFlow
    }

    /// How matched flows are shaped.
    public struct Shaping: Sendable, Hashable {
        /// The sustained rate, in bits per second of relayed payload.
        public var rateBitsPerSecond: Int
        /// The bucket depth in bytes: how much may pass at once after an idle period.
        public var burstBytes: Int
        /// Delayed throttling: the first `afterBytes` bytes of each flow and direction pass unshaped, the
        /// bucket applies only from then on (0: from the first byte).
        public var afterBytes: Int
        /// The directions shaped.
        public var directions: Directions
        /// Aggregate or per-flow buckets.
        public var scope: BucketScope
        /// TCP: the largest piece written at once, so pacing is smooth (a segment's payload by default).
        public var segmentBytes: Int
        /// UDP: the most bytes that may wait in the shaper's queue; a datagram that would wait longer than
        /// `queueLimitBytes` at the shaped rate is dropped (a byte-limited FIFO, like the kernel testbed's bfifo).
        /// TCP never drops: the proxy reads from the sender only as fast as it writes, so TCP flow control
        /// holds the sender back.
        public var queueLimitBytes: Int

        /// Creates a shaping policy.
        public init(
            rateBitsPerSecond: Int,
            burstBytes: Int = 16_384,
            afterBytes: Int = 0,
            directions: Directions = .download,
            scope: BucketScope = .aggregate,
            segmentBytes: Int = 1448,
            queueLimitBytes: Int = 50_000
        ) {
            self.rateBitsPerSecond = rateBitsPerSecond
            self.burstBytes = burstBytes
            self.afterBytes = afterBytes
            self.directions = directions
            self.scope = scope
            self.segmentBytes = segmentBytes
            self.queueLimitBytes = queueLimitBytes
        }
    }

    /// Random loss on the download direction (server to client), like the kernel testbed's `LOSS_PM`.
    ///
    /// UDP datagrams are dropped with `probability`. A TCP relay terminates both connections, so a lost segment
    /// cannot be reproduced on the wire: instead each relayed piece is, with `probability`, held back for
    /// `tcpStall` before it is written, which is what a retransmission after a timeout looks like to the
    /// receiving application (a gap, then the data). Congestion-window effects of loss are not modelled; use the
    /// kernel testbed (`scripts/testbed.sh`, `LOSS_PM`) for those.
    public struct Loss: Sendable, Hashable {
        /// The probability that one datagram (UDP) or one relayed piece (TCP) is lost, in [0, 1).
        public var probability: Double
        /// Whether only matched flows suffer loss (`true`) or every classified flow.
        public var matchedFlowsOnly: Bool
        /// The stall standing in for a lost TCP piece (Linux's minimum retransmission timeout by default).
        public var tcpStall: Duration

        /// Creates a loss policy.
        public init(probability: Double, matchedFlowsOnly: Bool = false, tcpStall: Duration = .milliseconds(200)) {
            self.probability = probability
            self.matchedFlowsOnly = matchedFlowsOnly
            self.tcpStall = tcpStall
        }
    }

    /// The relays.
    public var routes: [Route]
    /// Which flows are matched.
    public var classifier: Classifier
    /// How many bytes of each direction the classifier inspects (patterns beyond them are not seen).
    public var inspectedBytes: Int
    /// How matched flows are shaped; `nil` to classify and count only.
    public var shaping: Shaping?
    /// Random loss; `nil` for none.
    public var loss: Loss?
    /// A UDP flow with no datagram either way for this long is forgotten (its upstream socket closed).
    public var udpIdleTimeout: Duration
    /// The clock that paces the token buckets and times idle UDP flows (a manual clock in tests).
    public var clock: any Clock<Duration>
    /// The seed of the loss decisions; the same seed gives the same sequence of decisions.
    public var randomSeed: UInt64

    /// Creates a configuration.
    public init(
        routes: [Route],
        classifier: Classifier,
        inspectedBytes: Int = 4096,
        shaping: Shaping? = nil,
        loss: Loss? = nil,
        udpIdleTimeout: Duration = .seconds(30),
        clock: any Clock<Duration> = ContinuousClock(),
        randomSeed: UInt64 = 0x5EED_7E57_BED0_0001
    ) {
        self.routes = routes
        self.classifier = classifier
        self.inspectedBytes = inspectedBytes
        self.shaping = shaping
        self.loss = loss
        self.udpIdleTimeout = udpIdleTimeout
        self.clock = clock
        self.randomSeed = randomSeed
    }

    /// Checks every value and throws the first problem found.
    public func validate() throws(WeheTestbedError) {
        func fail(_ field: String, _ message: String) -> WeheTestbedError {
            WeheTestbedError(.invalidConfiguration, message, field: field)
        }
        guard !routes.isEmpty else { throw fail("routes", "at least one route is needed") }
        for route in routes {
            for (name, endpoint) in [("listen", route.listen), ("upstream", route.upstream)] {
                guard (0...65535).contains(endpoint.port) else {
                    throw fail("routes", "\(route): \(name) port \(endpoint.port) is outside 0-65535")
                }
                guard !endpoint.host.isEmpty else { throw fail("routes", "\(route): \(name) host is empty") }
            }
            guard route.upstream.port != 0 else { throw fail("routes", "\(route): upstream port 0") }
        }
        switch classifier {
        case .patterns(let patterns):
            guard !patterns.isEmpty else { throw fail("classifier", "no pattern given") }
            for pattern in patterns {
                guard !pattern.isEmpty else { throw fail("classifier", "an empty pattern matches everything") }
                guard pattern.count <= inspectedBytes else {
                    throw fail(
                        "classifier",
                        "a \(pattern.count)-byte pattern cannot occur in \(inspectedBytes) inspected bytes")
                }
            }
        case .serverPorts(let ports):
            guard !ports.isEmpty else { throw fail("classifier", "no port given") }
            guard ports.allSatisfy({ (1...65535).contains($0) }) else {
                throw fail("classifier", "ports must be within 1-65535")
            }
        case .everything, .nothing:
            break
        }
        guard inspectedBytes >= 1 else { throw fail("inspectedBytes", "must be at least 1") }
        if let shaping {
            guard shaping.rateBitsPerSecond > 0 else { throw fail("shaping.rate", "must be positive") }
            guard shaping.burstBytes >= 1 else { throw fail("shaping.burst", "must be at least 1 byte") }
            guard shaping.afterBytes >= 0 else { throw fail("shaping.afterBytes", "must not be negative") }
            guard !shaping.directions.isEmpty else { throw fail("shaping.directions", "no direction chosen") }
            guard shaping.segmentBytes >= 1 else { throw fail("shaping.segmentBytes", "must be at least 1") }
            guard shaping.queueLimitBytes >= 1 else { throw fail("shaping.queueLimit", "must be at least 1") }
        }
        if let loss {
            guard loss.probability >= 0, loss.probability < 1 else {
                throw fail("loss.probability", "must be within [0, 1)")
            }
            guard loss.tcpStall >= .zero else { throw fail("loss.tcpStall", "must not be negative") }
        }
        guard udpIdleTimeout > .zero else { throw fail("udpIdleTimeout", "must be positive") }
    }
}
