import Foundation
import Logging
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheTestbed
import WeheWire

@testable import WeheClient

/// Our client, our throttling proxy and our server on loopback, with a published trace: the userspace counterpart of
/// `scripts/e2e-detection.sh` (which needs root). The server listens on 127.0.0.2; the proxy listens on the same
/// port numbers on 127.0.0.1, where the client believes the server is, and relays every port the test uses (side
/// channel and analyzer unclassified). The server sees the proxy's address, 127.0.0.1, for every connection, so it
/// pairs the replay connections with the side channel as usual.
@Suite(
    "Detection through the userspace throttling proxy (loopback, published Molotov TV trace)",
    .serialized,
    .timeLimit(.minutes(5)),
    .enabled(if: TestResources.hasSharedReplays, "the published traces in ../shared/replays are needed")
)
struct DetectionThroughProxyTests {
    typealias Configuration = ThrottlingProxyConfiguration

    /// The Molotov TV trace's first request is a TLS ClientHello naming `secure-cdn3-live-mlflux-net.akamaized.net`;
    /// its bit-inverted control carries no such bytes.
    ///
    /// Why this trace: its 13 MB are paced by the recorded requests over about a second (nominal time 2 s, so 20 ms
    /// samples), which keeps the unthrottled control at tens of Mbit/s on loopback. Deezer's 7 MB come as one bulk
    /// response (nominal time 1 s, 10 ms samples); on an idle machine loopback delivered its control in two or three
    /// samples, too few non-zero values for the KS test (D 0.5, p 0.196: inconclusive), which is Wehe's documented
    /// behaviour for a path far faster than the trace needs, not a detection failure.
    static let pattern = Array("mlflux".utf8)

    private static var logger: Logger {
        var logger = Logger(label: "wehe-testbed-e2e")
        logger.logLevel = .critical
        return logger
    }

    /// Runs one Molotov TV test through a proxy with `classifier` and a 10 Mbit/s bucket; returns the result and the
    /// proxy's counters.
    private func runTest(
        adaptive: Bool = false,
        plan: AdaptivePlan? = nil,
        shaping: Configuration.Shaping = .init(rateBitsPerSecond: 10_000_000),
        classifier: (_ replayPort: Int) -> Configuration.Classifier
    ) async throws -> (TestResult, ThrottlingProxyStatistics) {
        // The proxy takes the server's port numbers on 127.0.0.1, where they may be taken: then both start over.
        try await ProxySuiteGate.run {
            try await PortCollisions.retrying {
                try await runTestOnce(adaptive: adaptive, plan: plan, shaping: shaping, classifier: classifier)
            }
        }
    }

    private func runTestOnce(
        adaptive: Bool,
        plan: AdaptivePlan?,
        shaping: Configuration.Shaping,
        classifier: (_ replayPort: Int) -> Configuration.Classifier
    ) async throws -> (TestResult, ThrottlingProxyStatistics) {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        let test = try ReplayClient.Test.load("molotovtv", from: library, catalog: try library.catalog())
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
        return try await withThrowingTaskGroup(of: (TestResult, ThrottlingProxyStatistics)?.self) { group in
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
                    classifier: classifier(replay),
                    shaping: shaping
                ))
            let result = try await proxy.withRunning { _ in
                var client = ReplayClientConfiguration(
                    server: "127.0.0.1", userID: "@testbed01", sideChannelPort: sideChannel, sideChannelTLS: false,
                    analyzerPort: analyzer, analyzerTLS: false, confirmation: false)
                client.addressDiscovery = .never
                client.timing.firstPollDelay = .milliseconds(50)
                if adaptive {
                    return try await ReplayClient(configuration: client).runAdaptive(test, plan: plan, fallBack: false)
                }
                return try await ReplayClient(configuration: client).run(test)
            }
            return (result, proxy.statistics)
        }
    }

    @Test("the app's flows throttled by their server name: differentiation, the app throttled")
    func throttledApp() async throws {
        let (result, stats) = try await runTest { _ in .patterns([Self.pattern]) }
        // Exactly one flow (the original replay's) was matched; the control and the side channel were not.
        #expect(stats.matchedFlows == 1)
        // The original's megabytes went through the shaper (all 12 MB on an idle machine; on a loaded one the
        // client's replay deadline ended the throttled replay after 11.55 MB once, after 5.85 MB another time).
        #expect(stats.shapedBytes > 1_000_000)
        #expect(result.summary.originalMeanMbps < 10)
        // The experiment needs an unthrottled path faster than the throttle. While the whole suite loads the 2-core
        // machine, the debug client, proxy and server on loopback once carried the unmatched control at 9 Mbit/s (twice the throttle is needed);
        // then no detector could tell the replays apart, and the verdict says nothing about detection.
        guard result.summary.controlMeanMbps > 20 else {
            withKnownIssue("loopback path slower than the throttle under load", isIntermittent: true) {
                Issue.record("control replay at \(result.summary.controlMeanMbps) Mbit/s: the path, not the throttle")
            }
            return
        }
        #expect(result.verdict == .differentiation, "\(result.summary)")
        #expect(result.direction == .throttled)
    }

    @Test("every flow of the replay port throttled (both replays): no differentiation")
    func portShaping() async throws {
        let (result, stats) = try await runTest { .serverPorts([$0]) }
        #expect(result.verdict == .noDifferentiation)
        #expect(result.summary.originalMeanMbps < 10)
        #expect(result.summary.controlMeanMbps < 10)
        #expect(stats.matchedFlows == 2)
    }

    @Test("adaptive: the app's flows throttled by their server name are found, for at most the published test's bytes")
    func adaptiveThrottledApp() async throws {
        let (result, stats) = try await runTest(adaptive: true) { _ in .patterns([Self.pattern]) }
        let sensitive = try #require(result.sensitive)
        let plan = AdaptivePlan(test: try Self.molotov())
        print(
            "adaptive, throttled app: \(sensitive.verdict.rawValue) after \(sensitive.rounds) rounds, "
                + "\(sensitive.bytesMoved ?? -1) bytes (published test \(plan.publishedBytes)), "
                + "\(sensitive.effectText), stop \(sensitive.stopReason?.rawValue ?? "none")")
        // Every round's original matched (its ClientHello names the server), no control did.
        #expect(stats.matchedFlows >= sensitive.rounds)
        #expect(sensitive.stopReason == .differentiation)
        #expect(result.verdict == .differentiation)
        #expect(result.direction == .throttled)
        #expect(sensitive.slowdown > 0.3)
        #expect((sensitive.bytesMoved ?? .max) <= plan.publishedBytes)
    }

    @Test("adaptive: both replays shaped alike (the replay port) is not blamed on the app")
    func adaptivePortShaping() async throws {
        let (result, _) = try await runTest(adaptive: true) { .serverPorts([$0]) }
        let sensitive = try #require(result.sensitive)
        let plan = AdaptivePlan(test: try Self.molotov())
        print(
            "adaptive, port shaped: \(sensitive.verdict.rawValue) after \(sensitive.rounds) rounds, "
                + "\(sensitive.bytesMoved ?? -1) bytes (published test \(plan.publishedBytes)), "
                + "\(sensitive.effectText), stop \(sensitive.stopReason?.rawValue ?? "none")")
        #expect(result.verdict != .differentiation)
        #expect(sensitive.stopReason != .differentiation)
        #expect((sensitive.bytesMoved ?? .max) <= plan.maximumBytes)
    }

    /// A throttle that starts after 1 MB of each of the app's flows, which the short rounds (605 kB of Molotov's
    /// 12.1 MB) never reach. The long round is cut at 4 MB here (7 MB in the catalog's plan): its original is
    /// slowed, so the run goes on with long rounds only, cut half as far again as where the long round's samples
    /// put the change (1.7 MB in a run alone), and finds the throttle, where before it stopped without a verdict
    /// (`long-round-differs`).
    ///
    /// The caps are raised (ten published tests' bytes, ten minutes): on loopback the server sends at memory speed
    /// until the client's close of a cut replay reaches it, so a round here moves two to four times its cut (a short
    /// round 1.6-3.6 MB, the long round 5.5 MB, in a run with the catalog's caps), and the ten long rounds that
    /// confirm the first would not fit under twice the published test; beside a build on the same cores the
    /// overshoot grew further and they did not fit under four either. The client expects each confirming round to
    /// move what the first long round moved past its cut, so the cap must hold ten of those. On a real path that
    /// overshoot is about one round trip of the path's rate; `confirmingLongRoundsFitTheCap` has the catalog's
    /// figures.
    @Test("adaptive: a throttle that starts after 1 MB of a flow is found by long rounds after the short ones agree")
    func adaptiveThrottleAfterBytes() async throws {
        var plan = AdaptivePlan(test: try Self.molotov())
        plan.floorRound = .bytes(4_000_000)
        plan.floorRoundBytes = 2 * 4_000_000
        plan.rule.maximumBytes = 10 * plan.publishedBytes
        plan.rule.timeLimitSeconds = 600
        let (result, stats) = try await runTest(
            adaptive: true, plan: plan, shaping: .init(rateBitsPerSecond: 8_000_000, afterBytes: 1_000_000)
        ) { _ in .patterns([Self.pattern]) }
        let sensitive = try #require(result.sensitive)
        print(
            "adaptive, throttled after 1 MB: \(sensitive.verdict.rawValue) after \(sensitive.rounds) rounds, "
                + "\(sensitive.bytesMoved ?? -1) bytes (published test \(plan.publishedBytes), cap "
                + "\(plan.maximumBytes)), \(sensitive.effectText), stop \(sensitive.stopReason?.rawValue ?? "none"), "
                + "shaped \(stats.shapedBytes) bytes; \(sensitive.note ?? ""); app/control per round: "
                + zip(sensitive.originalMeansMbps, sensitive.controlMeansMbps).map {
                    String(format: "%.2f", $0 / max($1, 1e-9))
                }.joined(separator: " "))
        // The throttle bit: bytes past the first megabyte of the app's flows went through the shaper (the long
        // rounds pass it; the short rounds never do).
        #expect(stats.shapedBytes > 0)
        #expect(sensitive.stopReason == .differentiation)
        #expect(result.verdict == .differentiation)
        #expect(result.direction == .throttled)
        let note = sensitive.note ?? ""
        #expect(note.contains("starts later in a flow"), "\(note)")
        // The confirming rounds were cut past the change and short of the first long round's 4 MB.
        let confirmingCut = note.firstMatch(of: /then of the first ([0-9.]+) MB/).flatMap { Double($0.1) }
        #expect(confirmingCut.map { $0 > 1 && $0 < 4 } == true, "\(note)")
        #expect((sensitive.bytesMoved ?? .max) <= plan.maximumBytes)
    }

    static func molotov() throws -> ReplayClient.Test {
        let library = ReplayLibrary(directory: TestResources.sharedReplays)
        return try ReplayClient.Test.load("molotovtv", from: library, catalog: try library.catalog())
    }
}
