import Foundation
import Logging
import Synchronization
import Testing
import WeheClient
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheTestbed
import WeheWire

/// Interleaved rounds of one published app test through the userspace throttling proxy: our server on 127.0.0.2, the
/// proxy on the same port numbers on 127.0.0.1 (side channel and analyzer unclassified, the app's replay port 443
/// classified by a server-name pattern), our client talking to the proxy. Shared by the suites that check what the
/// interleaved test reports under a given throttle.
enum InterleavedThroughProxy {
    /// What the tests need of one replay's outcome.
    struct Replay: Sendable {
        var role: ReplayRole
        var reachedDeadline: Bool
        var duration: Duration
        var bytesReceived: Int
        var seconds: Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
    }

    /// The test's result, every replay's outcome in order, and the original replay's bytes per the trace.
    struct Run: Sendable {
        var result: TestResult
        var replays: [Replay]
        var originalBytes: Int
    }

    private static var logger: Logger {
        var logger = Logger(label: "wehe-testbed-interleaved")
        logger.logLevel = .critical
        return logger
    }

    /// Runs `rounds` interleaved rounds of `app` with the proxy shaping flows that match `pattern`; `sampleCount` is
    /// what the server's grant asks for (the published 100 by default); `configure` adjusts the client. Takes its
    /// turn with the other proxy suites and starts over on a port collision.
    static func run(
        app: String, pattern: String, shaping: ThrottlingProxyConfiguration.Shaping, userID: String, rounds: Int,
        sampleCount: Int = 100, configure: @Sendable (inout ReplayClientConfiguration) -> Void = { _ in }
    ) async throws -> Run {
        try await ProxySuiteGate.run {
            try await PortCollisions.retrying {
                try await runOnce(
                    app: app, pattern: pattern, shaping: shaping, userID: userID, rounds: rounds,
                    sampleCount: sampleCount, configure: configure)
            }
        }
    }

    private static func runOnce(
        app: String, pattern: String, shaping: ThrottlingProxyConfiguration.Shaping, userID: String, rounds: Int,
        sampleCount: Int, configure: @Sendable (inout ReplayClientConfiguration) -> Void
    ) async throws -> Run {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let test = try ReplayClient.Test.load(app, from: library, catalog: try library.catalog())
        var server = ReplayServerConfiguration(
            replayDirectory: TestResources.sharedReplays,
            store: InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true)),
            logger: logger)
        server.bindAddress = "127.0.0.2"
        server.sideChannelTLSPort = nil
        server.sideChannelPlainPort = 0
        server.analyzerTLSPort = nil
        server.analyzerPlainPort = 0
        server.replayPorts = .ephemeral
        server.extraReplayPorts = []
        server.sampleCount = sampleCount
        server.limits.shutdownGracePeriod = .seconds(1)
        let replayServer = try ReplayServer(configuration: server)
        return try await withThrowingTaskGroup(of: Run?.self) { group in
            group.addTask {
                try await replayServer.run()
                return nil
            }
            defer { group.cancelAll() }
            let ports = try await replayServer.listeningPorts()
            let sideChannel = try #require(ports.sideChannelPlain)
            let analyzer = try #require(ports.analyzerPlain)
            let replay = try #require(ports.tcp[443])
            func route(_ port: Int, classified: Bool) -> ThrottlingProxyConfiguration.Route {
                .init(
                    .tcp, listen: .init(host: "127.0.0.1", port: port), upstream: .init(host: "127.0.0.2", port: port),
                    isClassified: classified)
            }
            let proxy = try ThrottlingProxy(
                configuration: ThrottlingProxyConfiguration(
                    routes: [
                        route(sideChannel, classified: false), route(analyzer, classified: false),
                        route(replay, classified: true),
                    ],
                    classifier: .patterns([Array(pattern.utf8)]),
                    shaping: shaping
                ))
            let outcomes = Mutex<[Replay]>([])
            let result = try await proxy.withRunning { _ in
                var client = ReplayClientConfiguration(
                    server: "127.0.0.1", userID: userID, sideChannelPort: sideChannel, sideChannelTLS: false,
                    analyzerPort: analyzer, analyzerTLS: false, confirmation: false)
                client.addressDiscovery = .never
                client.timing.firstPollDelay = .milliseconds(50)
                configure(&client)
                return try await ReplayClient(configuration: client).runInterleaved(test, rounds: rounds) { event in
                    if case .replayFinished(_, let role, let outcome) = event {
                        let replay = Replay(
                            role: role, reachedDeadline: outcome.reachedDeadline, duration: outcome.duration,
                            bytesReceived: outcome.bytesReceived)
                        outcomes.withLock { $0.append(replay) }
                    }
                }
            }
            return Run(result: result, replays: outcomes.withLock { $0 }, originalBytes: test.original.bytesDown)
        }
    }
}
