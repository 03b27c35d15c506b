import Foundation
import NIOCore
import ServiceLifecycle
import Testing
import WeheServer
import WeheStore
import WeheTestKit

@Suite("Graceful shutdown", .timeLimit(.minutes(5)))
struct ShutdownTests {
    @Test("graceful shutdown cuts a running session after the grace period and records why")
    func cutsRunningSession() async throws {
        let store = InMemoryResultStore()
        var configuration = ServerHarness.configuration(store: store)
        configuration.limits.shutdownGracePeriod = .milliseconds(300)
        let server = try ReplayServer(configuration: configuration)
        let group = ServiceGroup(configuration: .init(services: [server], logger: ServerHarness.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let ports = try await server.listeningPorts()
            let connection = try await RawConnection.connect(port: try #require(ports.sideChannelPlain))
            let start = ContinuousClock.now
            try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("@shutdown1;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                #expect(try await peer.receive() == "1;127.0.0.1;100")
                try await peer.send("NoIperf")
                try await peer.send("NoMobileStats")
                #expect(try await peer.receive()?.hasPrefix("{\"tcp\"") == true)
                #expect(try await peer.receive() == "0")
                await group.triggerGracefulShutdown()
                // The client is "replaying"; the server waits for the grace period, then closes the side channel.
                #expect(try await peer.receive() == nil)
            }
            #expect(start.duration(to: .now) >= .milliseconds(250))
            try await tasks.next()
        }
        let events = try await store.sessionEvents(SessionEventQuery())
        #expect(events.contains { $0.kind == .error && $0.detail.contains("cut by server shutdown") })
    }
}
