import NIOCore
import ServiceLifecycle
import Synchronization
import Testing
import WeheServer
import WeheStore
import WeheTestKit

/// SIGTERM at the end of the 10 000-client hostile benchmark sometimes ended the server with NIO's trap
/// "Deinited NIOAsyncWriter without calling finish()": connections accepted but still queued in a listener's accept
/// stream when the server stopped were dropped with their async wrappers unfinished. Each test runs the server in a
/// child process (an exit test), so that a trap fails the test instead of ending the test run.
@Suite("Shutdown with connections still queued", .timeLimit(.minutes(6)))
struct ShutdownUnderLoadTests {
    @Test("a graceful shutdown with connections queued in every TCP listener's accept stream ends cleanly")
    func gracefulShutdownWithQueuedConnections() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            try await ShutdownUnderLoadTests.shutDownWithQueuedConnections(graceful: true)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!stderr.contains("NIOAsyncWriter"), "\(stderr)")
    }

    @Test("cancelling the server with connections queued in every TCP listener's accept stream ends cleanly")
    func cancelWithQueuedConnections() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            try await ShutdownUnderLoadTests.shutDownWithQueuedConnections(graceful: false)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!stderr.contains("NIOAsyncWriter"), "\(stderr)")
    }

    /// In the child process: a server whose accept loops are held, connections to each of its TCP listeners (side
    /// channel and replay ports) that the server accepts and sets up but no loop takes, and to its analyzer, then the
    /// stop.
    static func shutDownWithQueuedConnections(graceful: Bool) async throws {
        let store = InMemoryResultStore()
        var configuration = ServerHarness.configuration(store: store)
        configuration.limits.shutdownGracePeriod = .milliseconds(200)
        let server = try ReplayServer(configuration: configuration)
        server.acceptPause.hold()
        let setUp = Atomic(0)
        server.setupFaults.inject { stage in
            if stage == .pipeline { setUp.add(1, ordering: .relaxed) }
        }
        let group = ServiceGroup(configuration: .init(services: [server], logger: ServerHarness.logger))
        var clients: [any Channel] = []
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let ports = try await server.listeningPorts()
            let listeners = [try #require(ports.sideChannelPlain)] + ports.tcp.values.sorted()
            for port in listeners {
                for _ in 0..<20 { clients.append(try await IdleConnection.open(port: port)) }
            }
            // The analyzer's accept loop (Hummingbird's) cannot be held: its connections may or may not be queued.
            for _ in 0..<20 { clients.append(try await IdleConnection.open(port: try #require(ports.analyzerPlain))) }
            // Wait until the server has set up connections of several listeners: they are in the accept streams,
            // which the held loops do not read.
            var waited = 0
            while setUp.load(ordering: .relaxed) < 2 * listeners.count, waited < 3000 {
                try await Task.sleep(for: .milliseconds(10))
                waited += 1
            }
            #expect(setUp.load(ordering: .relaxed) >= 2 * listeners.count)
            if graceful {
                await group.triggerGracefulShutdown()
                try await tasks.next()
            } else {
                tasks.cancelAll()
                try? await tasks.next()
            }
        }
        for client in clients { try? await client.close() }
    }
}
