import ArgumentParser
import Dispatch
import WeheTestbed

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `wehe testbed proxy`: run the userspace throttling middlebox until interrupted.
struct TestbedProxy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Relay TCP/UDP through a throttling middlebox (DPI pattern or port classification, token bucket).",
        discussion: """
            Example: throttle flows whose first bytes contain "googlevideo" to 1.5 Mbit/s:
              wehe testbed proxy --route tcp:127.0.0.1:8443=127.0.0.1:443 --pattern googlevideo --rate 1.5mbit
            Routes are PROTO:LISTEN=UPSTREAM (PROTO tcp or udp; endpoints host:port, [v6]:port or a bare port \
            on 127.0.0.1; listen port 0 picks a free port). Append ,plain to relay a route without \
            classification (a control channel). One line per bound route is printed on stdout \
            ("listening tcp 127.0.0.1:8443 -> 127.0.0.1:443"), then "ready"; on SIGINT/SIGTERM or after \
            --duration the counters are printed and the proxy exits 0. Exit 1: an invalid argument;             3: a listening address cannot be opened.
            """
    )

    @Option(name: .long, help: "A relay PROTO:LISTEN=UPSTREAM[,plain]; repeat for several.")
    var route: [String] = []

    @Option(name: .long, help: "Throttle flows containing this byte string in their first bytes (hex:… for bytes).")
    var pattern: [String] = []

    @Option(name: .long, help: "Throttle flows to this upstream (server) port; repeat for several.")
    var port: [Int] = []

    @Flag(name: .long, help: "Throttle every flow (a slow link).")
    var all = false

    @Option(name: .long, help: "Token-bucket rate, e.g. 1.5mbit, 800kbit; without it flows are only counted.")
    var rate: String?

    @Option(name: .long, help: "Bucket depth in bytes.")
    var burst = 16_384

    @Option(name: .customLong("after-bytes"), help: "Delayed throttling: shape only after this many bytes per flow.")
    var afterBytes = 0

    @Option(name: .long, help: "Shaped direction: download, upload or both.")
    var direction = "download"

    @Flag(name: .customLong("per-flow"), help: "One bucket per flow instead of one shared by all matched flows.")
    var perFlow = false

    @Option(name: .customLong("queue-limit"), help: "UDP: bytes that may wait in the shaper before drops.")
    var queueLimit = 50_000

    @Option(name: .long, help: "Random loss towards the client, a probability in [0, 1) (UDP drops, TCP stalls).")
    var loss = 0.0

    @Flag(name: .customLong("loss-matched-only"), help: "Apply loss to matched flows only.")
    var lossMatchedOnly = false

    @Option(name: .customLong("tcp-stall-ms"), help: "TCP: milliseconds a 'lost' piece is held back.")
    var tcpStallMilliseconds = 200

    @Option(name: .customLong("inspect-bytes"), help: "Bytes of each direction searched for the patterns.")
    var inspectBytes = 4096

    @Option(name: .customLong("udp-idle"), help: "Seconds after which a silent UDP flow is forgotten.")
    var udpIdleSeconds = 30.0

    @Option(name: .long, help: "Seed of the loss decisions.")
    var seed: UInt64 = 1

    @Option(name: .long, help: "Stop after this many seconds (default: run until interrupted).")
    var duration: Double?

    func validate() throws {
        guard !route.isEmpty else { throw ValidationError("give at least one --route") }
        let classifiers = [!pattern.isEmpty, !port.isEmpty, all].filter { $0 }.count
        guard classifiers <= 1 else { throw ValidationError("choose one of --pattern, --port and --all") }
        guard ["download", "upload", "both"].contains(direction) else {
            throw ValidationError("--direction must be download, upload or both")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
    }

    func makeConfiguration() throws(WeheTestbedError) -> ThrottlingProxyConfiguration {
        let routes = try route.map { text throws(WeheTestbedError) in
            try ThrottlingProxyConfiguration.Route(parsing: text)
        }
        let classifier: ThrottlingProxyConfiguration.Classifier
        if !pattern.isEmpty {
            classifier = .patterns(try pattern.map { text throws(WeheTestbedError) in try BytePattern.parse(text) })
        } else if !port.isEmpty {
            classifier = .serverPorts(Set(port))
        } else {
            classifier = all ? .everything : .nothing
        }
        var shaping: ThrottlingProxyConfiguration.Shaping?
        if let rate {
            let directions: ThrottlingProxyConfiguration.Directions =
                direction == "both" ? .both : direction == "upload" ? .upload : .download
            shaping = .init(
                rateBitsPerSecond: try ThrottlingProxyConfiguration.parseBitRate(rate),
                burstBytes: burst,
                afterBytes: afterBytes,
                directions: directions,
                scope: perFlow ? .perFlow : .aggregate,
                queueLimitBytes: queueLimit
            )
        }
        let lossPolicy =
            loss > 0
            ? ThrottlingProxyConfiguration.Loss(
                probability: loss, matchedFlowsOnly: lossMatchedOnly,
                tcpStall: .milliseconds(tcpStallMilliseconds))
            : nil
        let configuration = ThrottlingProxyConfiguration(
            routes: routes,
            classifier: classifier,
            inspectedBytes: inspectBytes,
            shaping: shaping,
            loss: lossPolicy,
            udpIdleTimeout: .milliseconds(Int64((udpIdleSeconds * 1000).rounded())),
            randomSeed: seed
        )
        try configuration.validate()
        return configuration
    }

    func run() async throws {
        let proxy: ThrottlingProxy
        do {
            proxy = try ThrottlingProxy(configuration: try makeConfiguration())
        } catch {
            throw CLIError(code: .invalidInput, "testbed proxy: \(error.description)").exit()
        }
        let stopAfter = duration
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await proxy.run { bound in
                        for entry in bound { print("listening \(entry)") }
                        print("ready")
                        fflush(nil)
                    }
                }
                group.addTask { await Self.interruption() }
                if let stopAfter {
                    group.addTask { try? await Task.sleep(for: .milliseconds(Int64(stopAfter * 1000))) }
                }
                // The first task to end (a signal, the duration, or a proxy failure) stops the others.
                try await group.next()
                group.cancelAll()
            }
        } catch let error as WeheTestbedError {
            throw CLIError(code: .missingInput, "testbed proxy: \(error.description)").exit()
        }
        print("stopped: \(proxy.statistics)")
    }

    /// Returns when SIGINT or SIGTERM arrives (or when the waiting task is cancelled).
    private static func interruption() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        for await _ in stream { return }
    }
}
