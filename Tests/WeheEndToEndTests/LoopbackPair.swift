import Foundation
import Logging
import ServiceLifecycle
import WeheClient
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheTestbed

/// A WeHeY pair of our servers in the test process: server 1 and server 2 on two loopback addresses with the same
/// side-channel and analyzer ports (the client uses one port pair for both), certificates from one CA (the client
/// trusts it, and server 1 checks server 2's certificate with it when it fetches the peer's measurements), and each
/// configured to answer `getServers` with the pair.
///
/// With `throttleRate`, the client reaches both servers through one userspace throttling middlebox
/// (`ThrottlingProxy`, aggregate token bucket) that mirrors every port of server N on a front address: the two
/// paths then share one limiter, like a per-plan throttler in the client's access network.
struct LoopbackPair: Sendable {
    /// Addresses the client talks to (the fronts when throttled), server 1 first.
    let addresses: [String]
    let stores: [InMemoryResultStore]
    let sideChannelPort: Int
    let analyzerPort: Int
    let caPEM: String
    let caPath: String

    /// Runs `body` with the pair up. `pairAddresses` overrides the pair that `getServers` answers (e.g. naming an
    /// address where nothing runs). With `sitePair`, `getServers` answers that M-Lab site pair instead (and no
    /// address pair), and each server may fetch measurements from the addresses the client uses (`--fleet-peer`).
    static func run<T: Sendable>(
        servers: [String],
        fronts: [String] = [],
        throttle test: ReplayClient.Test? = nil,
        throttleRate: Int = 1_000_000,
        pairAddresses: [String]? = nil,
        sitePair: [String]? = nil,
        _ body: @Sendable (LoopbackPair) async throws -> T
    ) async throws -> T {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-pair")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let certificates = try CertificateFactory.issue(into: scratch + "/certs", hostNames: servers + fronts)
        let caPEM = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        let visible = test == nil ? servers : fronts
        let addresses = pairAddresses ?? visible
        let pair = LocalizationPair(
            prefix: nil, first: addresses[0], second: addresses[1], label: "loopback test network")
        // Both servers hold one fleet secret, so server 1 may fetch server 2's measurements.
        let fleet = try FleetAuthenticator(secret: Array("loopback pair fleet secret, 32+ bytes long".utf8))
        var lastError: (any Error)?
        for _ in 0..<6 {
            let side = Int.random(in: 20_000...40_000)
            let analyzer = side + 1
            let offset = Int.random(in: 20_000...40_000)
            var servicesList: [ReplayServer] = []
            var stores: [InMemoryResultStore] = []
            for (index, address) in servers.enumerated() {
                let store = InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true))
                var configuration = ReplayServerConfiguration(
                    replayDirectory: TestResources.fixtureReplays, store: store, logger: LoopbackWorld.logger)
                configuration.dataDirectory = scratch + "/server\(index)"
                configuration.bindAddress = address
                configuration.sideChannelTLSPort = side
                configuration.sideChannelPlainPort = nil
                configuration.analyzerTLSPort = analyzer
                configuration.analyzerPlainPort = nil
                configuration.replayPorts = .recorded(offset: offset)
                configuration.extraReplayPorts = []
                configuration.sampleCount = 100
                configuration.tls = .init(
                    certificateChainPath: certificates.serverCertificate, privateKeyPath: certificates.serverKey)
                configuration.limits.shutdownGracePeriod = .milliseconds(200)
                if let sitePair {
                    // A fleet: getServers answers the site pair; the machines are fleet peers (a site names none).
                    configuration.localizationSitePairs = [
                        LocalizationPair(
                            prefix: nil, first: sitePair[0], second: sitePair[1], label: "loopback fleet network")
                    ]
                    configuration.fleetPeers = addresses
                } else {
                    configuration.localizationServerPairs = [pair]
                }
                configuration.peerCACertificatePath = certificates.caCertificate
                configuration.peerAnalyzerPort = analyzer
                configuration.fleetAuthenticator = fleet
                // Through the throttling middlebox, server 1 reaches server 2 by its front address.
                if index < fronts.count { configuration.fleetHostNames = [fronts[index]] }
                servicesList.append(try ReplayServer(configuration: configuration))
                stores.append(store)
            }
            let group = ServiceGroup(configuration: .init(services: servicesList, logger: LoopbackWorld.logger))
            let world = LoopbackPair(
                addresses: visible, stores: stores, sideChannelPort: side, analyzerPort: analyzer, caPEM: caPEM,
                caPath: certificates.caCertificate)
            let outcome: Result<T, any Error>? = await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                var ports: [ReplayServer.ListeningPorts] = []
                do {
                    for server in servicesList { ports.append(try await server.listeningPorts()) }
                } catch {
                    lastError = error
                    await group.triggerGracefulShutdown()
                    try? await tasks.waitForAll()
                    return nil
                }
                let result: Result<T, any Error>
                do {
                    if let test {
                        let proxy = try ThrottlingProxy(
                            configuration: middlebox(
                                servers: servers, fronts: fronts, ports: ports, test: test, rate: throttleRate))
                        result = .success(try await proxy.withRunning { _ in try await body(world) })
                    } else {
                        result = .success(try await body(world))
                    }
                } catch {
                    result = .failure(error)
                }
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                return result
            }
            if let outcome { return try outcome.get() }
        }
        throw lastError ?? CancellationError()
    }

    /// Every port of server N mirrored on front N; the test's original flows (first 32 bytes of each) share one
    /// aggregate token bucket across both fronts.
    private static func middlebox(
        servers: [String],
        fronts: [String],
        ports: [ReplayServer.ListeningPorts],
        test: ReplayClient.Test,
        rate: Int
    ) -> ThrottlingProxyConfiguration {
        typealias Route = ThrottlingProxyConfiguration.Route
        typealias Endpoint = ThrottlingProxyConfiguration.Endpoint
        var routes: [Route] = []
        for (index, server) in servers.enumerated() {
            let front = fronts[index]
            func mirror(_ transport: ThrottlingProxyConfiguration.Transport, _ port: Int, _ classified: Bool) -> Route {
                Route(
                    transport, listen: Endpoint(host: front, port: port), upstream: Endpoint(host: server, port: port),
                    isClassified: classified)
            }
            let own = ports[index]
            routes += [own.sideChannelTLS, own.analyzerTLS].compactMap { $0 }.map { mirror(.tcp, $0, false) }
            routes += Set(own.tcp.values).sorted().map { mirror(.tcp, $0, true) }
            routes += Set(own.udp.values).sorted().map { mirror(.udp, $0, true) }
        }
        var patterns: [[UInt8]] = []
        var seen: Set<CSPair> = []
        for packet in test.original.packets where !packet.payload.isEmpty && !seen.contains(packet.csPair) {
            seen.insert(packet.csPair)
            let pattern = Array(packet.payload.prefix(32))
            if !patterns.contains(pattern) { patterns.append(pattern) }
        }
        return ThrottlingProxyConfiguration(
            routes: routes, classifier: .patterns(patterns),
            shaping: .init(rateBitsPerSecond: rate, scope: .aggregate))
    }

    /// A client configuration for server 1 of the pair.
    func client(userID: String, store: (any ResultStore)? = nil) -> ReplayClientConfiguration {
        var configuration = ReplayClientConfiguration(
            server: addresses[0], userID: userID, trustedCertificatesPEM: caPEM, sideChannelPort: sideChannelPort,
            analyzerPort: analyzerPort, confirmation: false, logger: LoopbackWorld.logger)
        configuration.store = store
        configuration.timing.firstPollDelay = .milliseconds(100)
        configuration.timing.maximumPollDelay = .milliseconds(500)
        configuration.timing.pollAttempts = 40
        return configuration
    }
}
