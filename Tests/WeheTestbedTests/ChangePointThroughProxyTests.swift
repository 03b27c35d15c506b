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

/// Issue 18 item 3 end to end: our client, our throttling proxy and our server on loopback (as
/// `TimeLimitThroughProxyTests`). The Deezer original (6.2 MB, matched by its server name) passes unshaped for its
/// first 3 MB (the proxy's `afterBytes`, counted on the payload), then gets 8 Mbit/s; the control is never shaped.
/// Eight interleaved rounds: the change is found, as a throttle that starts, near 3 MB, with the later part slowed
/// and the earlier one not; the published test's record carries it.
@Suite(
    "A throttle that starts after 3 MB (loopback proxy, published Deezer trace)",
    .serialized,
    .timeLimit(.minutes(5)),
    .enabled(if: TestResources.hasSharedReplays, "the published traces in ../shared/replays are needed")
)
struct ChangePointThroughProxyTests {
    typealias Configuration = ThrottlingProxyConfiguration

    static let throttleBitsPerSecond = 8_000_000
    static let afterBytes = 3_000_000
    static let rounds = 8

    /// What the test needs of one replay's outcome.
    struct Replay: Sendable {
        var role: ReplayRole
        var reachedDeadline: Bool
        var duration: Duration
        var bytesReceived: Int
    }

    private static var logger: Logger {
        var logger = Logger(label: "wehe-testbed-change-point")
        logger.logLevel = .critical
        return logger
    }

    /// Runs 8 interleaved rounds through the proxy; returns the result and every replay's outcome in order.
    private func runRounds() async throws -> (TestResult, [Replay], Int) {
        try await ProxySuiteGate.run { try await PortCollisions.retrying { try await runRoundsOnce() } }
    }

    private func runRoundsOnce() async throws -> (TestResult, [Replay], Int) {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let test = try ReplayClient.Test.load("deezer", from: library, catalog: try library.catalog())
        var server = ReplayServerConfiguration(
            replayDirectory: TestResources.sharedReplays,
            store: InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true)),
            logger: Self.logger)
        server.bindAddress = "127.0.0.2"
        server.sideChannelTLSPort = nil
        server.sideChannelPlainPort = 0
        server.analyzerTLSPort = nil
        server.analyzerPlainPort = 0
        server.replayPorts = .ephemeral
        server.extraReplayPorts = []
        server.limits.shutdownGracePeriod = .seconds(1)
        let replayServer = try ReplayServer(configuration: server)
        return try await withThrowingTaskGroup(of: (TestResult, [Replay], Int)?.self) { group in
            group.addTask {
                try await replayServer.run()
                return nil
            }
            defer { group.cancelAll() }
            let ports = try await replayServer.listeningPorts()
            let sideChannel = try #require(ports.sideChannelPlain)
            let analyzer = try #require(ports.analyzerPlain)
            let replay = try #require(ports.tcp[443])
            func route(_ port: Int, classified: Bool) -> Configuration.Route {
                .init(
                    .tcp, listen: .init(host: "127.0.0.1", port: port), upstream: .init(host: "127.0.0.2", port: port),
                    isClassified: classified)
            }
            let proxy = try ThrottlingProxy(
                configuration: Configuration(
                    routes: [
                        route(sideChannel, classified: false), route(analyzer, classified: false),
                        route(replay, classified: true),
                    ],
                    classifier: .patterns([Array("dzcdn".utf8)]),
                    shaping: .init(rateBitsPerSecond: Self.throttleBitsPerSecond, afterBytes: Self.afterBytes)
                ))
            let outcomes = Mutex<[Replay]>([])
            let result = try await proxy.withRunning { _ in
                var client = ReplayClientConfiguration(
                    server: "127.0.0.1", userID: "@changepoint1", sideChannelPort: sideChannel, sideChannelTLS: false,
                    analyzerPort: analyzer, analyzerTLS: false, confirmation: false)
                client.addressDiscovery = .never
                client.timing.firstPollDelay = .milliseconds(50)
                return try await ReplayClient(configuration: client).runInterleaved(test, rounds: Self.rounds) {
                    event in
                    if case .replayFinished(_, let role, let outcome) = event {
                        let replay = Replay(
                            role: role, reachedDeadline: outcome.reachedDeadline, duration: outcome.duration,
                            bytesReceived: outcome.bytesReceived)
                        outcomes.withLock { $0.append(replay) }
                    }
                }
            }
            return (result, outcomes.withLock { $0 }, test.original.bytesDown)
        }
    }

    @Test("the change is found where the throttle starts, and each part is judged on its own")
    func throttleStartsAfterThreeMegabytes() async throws {
        let (result, outcomes, _) = try await runRounds()
        #expect(outcomes.count == 2 * Self.rounds)
        let sensitive = try #require(result.sensitive)
        let change = try #require(sensitive.changePoint)
        #expect(change.rounds == Self.rounds)
        #expect(change.bins >= 10)
        #expect(change.found, "\(change)")
        #expect(change.kind == .starts)
        #expect(change.pValue <= change.alpha)
        // The proxy counts payload bytes, so the truth is 3 MB of the original (one bin is 1/50 of 6.2 MB).
        #expect(abs(change.changeMegabytes - 3) <= 0.6, "\(change.changeMegabytes) MB")
        let after = try #require(change.after)
        let before = try #require(change.before)
        #expect(after.verdict == .differentiation && after.direction == .throttled)
        #expect(after.slowdown > 0.5, "\(after)")
        #expect(before.verdict != .differentiation, "\(before)")
        #expect(change.effectText?.hasPrefix("throttle starts after ") == true)
        print("change through the proxy: \(change.effectText ?? "-"), p \(change.pValue)")
    }
}
