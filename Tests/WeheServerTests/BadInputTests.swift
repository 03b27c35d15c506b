import Foundation
import NIOCore
import NIOSSL
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Bad input", .timeLimit(.minutes(6)))
struct BadInputTests {
    static func quick(_ configuration: inout ReplayServerConfiguration) {
        configuration.limits.firstMessageTimeout = .milliseconds(400)
    }

    /// Sends bytes on a fresh side channel and reads until the server closes; returns how long that took, from
    /// before the connect: the server's deadlines start at its accept, which a loaded client can learn of late, so
    /// timing from the connect's completion could come out shorter than the server's deadline.
    static func sendAndAwaitClose(_ port: Int, _ bytes: [UInt8]) async throws -> Duration {
        let start = ContinuousClock.now
        let connection = try await RawConnection.connect(port: port)
        try await connection.channel.executeThenClose { inbound, outbound in
            if !bytes.isEmpty { try await outbound.write(ByteBuffer(bytes: bytes)) }
            do {
                for try await _ in inbound {}
            } catch {
                // A reset also counts as closed.
            }
        }
        return start.duration(to: .now)
    }

    /// A complete, normal TCP replay; proves the server still serves.
    static func normalSession(_ server: ServerHarness.Running, user: String = "@zzzzzzzz1") async throws {
        var client = ScriptedClient()
        client.userID = user
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays).trace(
            file: "port_8081.pcap_client_all.json")
        let outcome = try await client.run(trace, testID: 0, server: server)
        #expect(outcome.grant == "1;127.0.0.1;100")
        #expect(outcome.responseBytes == 1_000_000)
        #expect(outcome.okAfterResult == "OK")
    }

    @Test(
        "garbage, a huge length prefix, an oversized declaration or a prefix then silence close the connection",
        arguments: [
            Array("hello, this is not a frame at all".utf8), Array("9999999999".utf8), Array("0000000040".utf8),
            SideChannelFramer.frame(String(repeating: "a", count: 5000)), Array("0000000".utf8),
            SideChannelFramer.frame("not;a;declaration"),
        ])
    func closesOffendingConnection(bytes: [UInt8]) async throws {
        try await ServerHarness.run(configure: Self.quick) { server in
            let port = try #require(server.ports.sideChannelPlain)
            let elapsed = try await Self.sendAndAwaitClose(port, bytes)
            #expect(elapsed < .seconds(5))
            try await Self.normalSession(server)
        }
    }

    @Test("a reader slower than the server's writes still gets every response byte before the server closes")
    func slowReaderGetsTheWholeResponse() async throws {
        // One 24 MB response: more than the kernel's socket buffers hold, so when the last write returns most of
        // it still waits in the server's own buffers for the slow reader.
        let directory = TestResources.temporaryDirectory("wehe-slow-reader")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = "198.018.000.010.40100-198.018.002.002.08082"
        let json = """
            [[{"c_s_pair": "\(pair)", "payload": "170303000400000000", "timestamp": 0.0, \
            "response_len": 24000000, "response_hash": "\(String(repeating: "0", count: 40))"}], [], ["\(pair)"], "port_8082"]
            """
        try Data(json.utf8).write(to: URL(fileURLWithPath: directory + "/port_8082.pcap_client_all.json"))
        try await ServerHarness.run(replays: directory) { server in
            var client = ScriptedClient()
            client.slowReader = .milliseconds(1500)
            let trace = try ReplayLibrary(directory: directory).trace(file: "port_8082.pcap_client_all.json")
            let outcome = try await client.run(trace, testID: 0, server: server)
            #expect(outcome.responseBytes == 24_000_000)
            #expect(outcome.okAfterResult == "OK")
        }
    }

    @Test("a connection that never speaks is closed after the first-message timeout")
    func silentConnection() async throws {
        try await ServerHarness.run(configure: Self.quick) { server in
            let elapsed = try await Self.sendAndAwaitClose(try #require(server.ports.sideChannelPlain), [])
            #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(5))
            let replayElapsed = try await Self.sendAndAwaitClose(server.tcp(443), [])
            #expect(replayElapsed >= .milliseconds(300) && replayElapsed < .seconds(5))
            try await Self.normalSession(server)
        }
    }

    @Test("a half-open TLS handshake is closed; a real TLS session still works")
    func halfOpenTLS() async throws {
        let directory = TestResources.temporaryDirectory("wehe-server-tls")
        let files = try CertificateFactory.issue(into: directory, hostNames: ["127.0.0.1"])
        let withTLS: (inout ReplayServerConfiguration) -> Void = { configuration in
            Self.quick(&configuration)
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.sideChannelTLSPort = 0
        }
        try await ServerHarness.run(configure: withTLS) { server in
            let port = try #require(server.ports.sideChannelTLS)
            // A TLS record header announcing a ClientHello, then nothing.
            let elapsed = try await Self.sendAndAwaitClose(port, [0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
            #expect(elapsed < .seconds(5))
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(files.caCertificate)
            tls.certificateVerification = .noHostnameVerification
            var client = ScriptedClient()
            client.tls = try NIOSSLContext(configuration: tls)
            let trace = try ReplayLibrary(directory: TestResources.fixtureReplays).trace(
                file: "TinyWeb_11212026.pcap_client_all.json")
            let outcome = try await client.run(trace, testID: 0, server: server, sidePort: port)
            #expect(outcome.grant == "1;127.0.0.1;100")
            #expect(outcome.okAfterResult == "OK")
        }
    }

    @Test("past the side channels' share, the oldest connections that never declared are closed for the newer ones")
    func connectionCap() async throws {
        let capped: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.limits.maximumConnections = 20
            configuration.limits.firstMessageTimeout = .seconds(30)
        }
        try await ServerHarness.run(configure: capped) { server in
            let port = try #require(server.ports.sideChannelPlain)
            // The side channels' share of the budget is 45 %: 9 of 20.
            let share = server.server.connectionLimiter.share(.side)
            #expect(share == 9)
            var idle: [any Channel] = []
            for _ in 0..<20 { idle.append(try await IdleConnection.open(port: port)) }
            // Each connection past the share took the slot of the oldest admitted one: 11 are closed by the server,
            // 9 stay. (Which 11 depends on the order the server admitted them in: child channels are set up on
            // several event loops, so it need not be the order of the connects.)
            try await withThrowingTaskGroup(of: Void.self) { closes in
                for connection in idle { closes.addTask { try await connection.closeFuture.get() } }
                for _ in 0..<(20 - share) { try await closes.next() }
                #expect(idle.filter(\.isActive).count == share)
                #expect(server.server.connectionLimiter.current(.side) == share)
                // A real session gets in past them (the oldest idle one makes way).
                try await Self.normalSession(server)
                for connection in idle { try? await connection.close() }
            }
        }
    }

    @Test("when the side channels' share is full of admitted sessions, a newcomer is closed at once")
    func connectionCapOfAdmittedSessions() async throws {
        let capped: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.limits.maximumConnections = 4
            configuration.limits.progressTimeout = .seconds(60)
        }
        try await ServerHarness.run(configure: capped) { server in
            let port = try #require(server.ports.sideChannelPlain)
            #expect(server.server.connectionLimiter.share(.side) == 1)
            let grant = try await AdmissionTests.declare(
                server, user: "holder0001", replay: "TinyWeb-11212026", from: "127.0.0.5"
            ) {
                // The one slot is held by an admitted session: nothing can be evicted for a connection that has
                // not declared anything.
                let elapsed = try await Self.sendAndAwaitClose(port, [])
                // At once, not after the 60 s progress timeout (2.009 s once on a loaded machine: the bound is wide).
                #expect(elapsed < .seconds(15))
            }
            #expect(grant == "1;127.0.0.5;100")
        }
    }

    @Test("an unparsable throughput upload ends the session with a recorded error; the server goes on")
    func badUpload() async throws {
        let trace = try ReplayLibrary(directory: TestResources.fixtureReplays).trace(
            file: "port_8081.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.userID = "baduploads"
            client.samples = "[[1,2],[0.1]]"
            let outcome = try await client.run(trace, testID: 0, server: server)
            #expect(outcome.okAfterSamples == nil)
            let events = try await server.store.sessionEvents(SessionEventQuery())
            #expect(events.contains { $0.kind == .error && $0.userID == "baduploads" })
            #expect(try await server.store.test(TestKey(userID: "baduploads", historyCount: 1)) == nil)
            try await Self.normalSession(server)
        }
    }

    @Test("one address cannot take every slot: its connections beyond the per-address cap are closed at once")
    func perAddressCap() async throws {
        let capped: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.limits.maximumConnectionsPerAddress = 5
            configuration.limits.firstMessageTimeout = .seconds(30)
        }
        try await ServerHarness.run(configure: capped) { server in
            let port = try #require(server.ports.sideChannelPlain)
            var idle: [any Channel] = []
            for _ in 0..<5 { idle.append(try await IdleConnection.open(port: port)) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await Self.sendAndAwaitClose(port, []) < .seconds(2))
            // Another address is still served while the first one holds its five slots.
            var client = ScriptedClient()
            client.source = "127.0.0.23"
            let trace = try ReplayLibrary(directory: TestResources.fixtureReplays).trace(
                file: "port_8081.pcap_client_all.json")
            let outcome = try await client.run(trace, testID: 0, server: server)
            #expect(outcome.grant == "1;127.0.0.23;100")
            #expect(outcome.responseBytes == 1_000_000)
            for connection in idle { try await connection.close() }
        }
    }
}
