import NIOCore
import NIOPosix
import Testing
import WeheServer
import WeheStore
import WeheTestKit

/// A server that cannot take one of its ports must stop with a clear error, not wait forever: embedders await
/// `listeningPorts()` and `wehe-server serve` awaits `run()`.
@Suite("Startup failures", .timeLimit(.minutes(5)))
struct StartupFailureTests {
    @Test("an analyzer port already taken: run() and listeningPorts() fail with bindFailed, nothing stays bound")
    func analyzerPortTaken() async throws {
        // Hold a listener on a loopback port, then configure the analyzer on it.
        let holder = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let taken = try #require(holder.localAddress?.port)
        defer { holder.close(promise: nil) }
        let store = InMemoryResultStore(anonymization: try AnonymizationPolicy(storeFullAddress: true))
        var configuration = ServerHarness.configuration(store: store)
        configuration.analyzerPlainPort = taken
        let server = try ReplayServer(configuration: configuration)
        let clock = ContinuousClock()
        let started = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await #expect(throws: ReplayServerError(.bindFailed, "")) { try await server.run() }
            }
            group.addTask {
                await #expect(throws: ReplayServerError(.bindFailed, "")) { _ = try await server.listeningPorts() }
            }
            try await group.waitForAll()
        }
        // Fails at once rather than waiting for anything (24 s once under the full suite's load: a wide bound).
        #expect(started.duration(to: clock.now) < .seconds(90))
        #expect(await server.status().running == false)
    }
}
