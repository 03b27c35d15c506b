import Foundation
import Logging
import ServiceLifecycle
import WeheClient
import WeheServer
import WeheStore
import WeheStoreSQL
import WeheTestKit
import WeheWire

/// Our server (`ReplayServer`, TLS with a throwaway CA) running in the test process on a loopback address, with
/// every replay listener on its recorded port plus an offset, and a client configuration pointing at it.
struct LoopbackWorld: Sendable {
    let ports: ReplayServer.ListeningPorts
    let serverStore: InMemoryResultStore
    let address: String
    let caPEM: String
    let caPath: String

    static var logger: Logger {
        var logger = Logger(label: "wehe-e2e")
        logger.logLevel = ProcessInfo.processInfo.environment["WEHE_TEST_LOG"] == "1" ? .debug : .critical
        return logger
    }

    /// Runs `body` while the server serves `replays` on `address`. The replay ports move by a random offset; a
    /// collision with a port some other program holds is retried with another offset.
    static func run<T: Sendable>(
        address: String,
        replays: String = TestResources.fixtureReplays,
        sampleCount: Int = 100,
        configure: (inout ReplayServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (LoopbackWorld) async throws -> T
    ) async throws -> T {
        let scratch = TestResources.temporaryDirectory("wehe-e2e-server")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let certificates = try CertificateFactory.issue(into: scratch + "/certs", hostNames: [address])
        let caPEM = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        var lastError: (any Error)?
        for _ in 0..<6 {
            let store = InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true))
            var configuration = ReplayServerConfiguration(replayDirectory: replays, store: store, logger: logger)
            configuration.dataDirectory = scratch
            configuration.bindAddress = address
            configuration.sideChannelTLSPort = 0
            configuration.sideChannelPlainPort = nil
            configuration.analyzerTLSPort = 0
            configuration.analyzerPlainPort = nil
            configuration.replayPorts = .recorded(offset: Int.random(in: 20_000...40_000))
            configuration.extraReplayPorts = []
            configuration.sampleCount = sampleCount
            configuration.tls = .init(
                certificateChainPath: certificates.serverCertificate, privateKeyPath: certificates.serverKey)
            configuration.limits.shutdownGracePeriod = .milliseconds(200)
            configure(&configuration)
            let server = try ReplayServer(configuration: configuration)
            let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
            let outcome: Result<T, any Error>? = await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                let ports: ReplayServer.ListeningPorts
                do {
                    ports = try await server.listeningPorts()
                } catch {
                    lastError = error
                    await group.triggerGracefulShutdown()
                    try? await tasks.waitForAll()
                    return nil
                }
                let world = LoopbackWorld(
                    ports: ports, serverStore: store, address: address, caPEM: caPEM,
                    caPath: certificates.caCertificate)
                let result: Result<T, any Error>
                do {
                    result = .success(try await body(world))
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

    /// A client configuration for this server (TLS side channel and analyzer, the CA trusted).
    func client(
        userID: String = "@e2e" + String(Int.random(in: 100_000...999_999)),
        store: (any ResultStore)? = nil,
        confirmation: Bool = false
    ) -> ReplayClientConfiguration {
        var configuration = ReplayClientConfiguration(
            server: address, userID: userID, trustedCertificatesPEM: caPEM,
            sideChannelPort: ports.sideChannelTLS ?? -1, analyzerPort: ports.analyzerTLS ?? -1,
            confirmation: confirmation, logger: Self.logger)
        configuration.store = store
        configuration.timing.firstPollDelay = .milliseconds(100)
        configuration.timing.maximumPollDelay = .milliseconds(500)
        configuration.timing.pollAttempts = 40
        return configuration
    }

    /// A catalog test of the fixture traces.
    static func test(_ id: String, replays: String = TestResources.fixtureReplays) throws -> ReplayClient.Test {
        let library = ReplayLibrary(directory: replays)
        return try ReplayClient.Test.load(id, from: library, catalog: try library.catalog())
    }

    /// Runs `body` with a fresh SQLite history, closed (and its directory removed) on every path: an SQLite store
    /// dropped while open traps in debug builds, which would turn one failed expectation into a crashed test run.
    static func withHistory<T>(_ body: (SQLResultStore) async throws -> T) async throws -> T {
        let (store, directory) = try await history()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let value = try await body(store)
            await store.close()
            return value
        } catch {
            await store.close()
            throw error
        }
    }

    /// A fresh SQLite history in a temporary directory (the caller closes it; prefer `withHistory`).
    static func history() async throws -> (SQLResultStore, String) {
        let directory = TestResources.temporaryDirectory("wehe-e2e-history")
        let store = try await SQLResultStore.open(
            configuration: SQLStoreConfiguration(backend: .sqlite(SQLiteOptions(path: directory + "/history.sqlite"))),
            logger: logger)
        return (store, directory)
    }
}
