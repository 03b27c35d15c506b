import Foundation
import NIOCore
import NIOSSL
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// Bounded HTTP connections, admission that one address cannot take over,
/// bounded writes from unauthenticated input, and TLS 1.2 with AEAD suites only.
@Suite("Server hardened", .timeLimit(.minutes(6)))
struct ServerHardeningTests {
    static let replay = "TinyWeb-11212026"

    // MARK: defect 1: analyzer connections

    @Test("an analyzer connection that sends nothing is closed after the first-byte deadline")
    func silentAnalyzerConnection() async throws {
        let quick: (inout ReplayServerConfiguration) -> Void = { $0.limits.httpFirstByteTimeout = .seconds(1) }
        try await ServerHarness.run(configure: quick) { server in
            let elapsed = try await BadInputTests.sendAndAwaitClose(try #require(server.ports.analyzerPlain), [])
            #expect(elapsed >= .milliseconds(800) && elapsed < .seconds(8))
        }
    }

    @Test("an analyzer request whose headers trickle in is closed at the request deadline")
    func slowHeaders() async throws {
        let quick: (inout ReplayServerConfiguration) -> Void = { $0.limits.httpRequestTimeout = .seconds(2) }
        try await ServerHarness.run(configure: quick) { server in
            let port = try #require(server.ports.analyzerPlain)
            let connection = try await RawConnection.connect(port: port, deadline: .seconds(30))
            let start = ContinuousClock.now
            try await connection.channel.executeThenClose { inbound, outbound in
                // Under a full run's load this task can first run after the server's 2-s deadline has closed the
                // connection: the write then fails, and the connection was closed at the deadline all the same.
                try? await outbound.write(ByteBuffer(string: "GET /Results?command=defaultSetting HTTP/1.1\r\n"))
                // One header byte every 200 ms, for up to 20 s: never a complete head.
                let trickle = Task {
                    for index in 0..<100 {
                        try await Task.sleep(for: .milliseconds(200))
                        try await outbound.write(ByteBuffer(string: index % 2 == 0 ? "X" : "y"))
                    }
                }
                do {
                    for try await _ in inbound {}
                } catch {}
                trickle.cancel()
            }
            #expect(start.duration(to: .now) < .seconds(10))
            // The analyzer still answers a normal request. Under a full test run's load the server's loop can take
            // a new connection later than this test's 2-s request deadline and close it unanswered (seen in CI: status
            // 0 once, and once "I/O on closed channel" when the request was written after the close), so a few fresh
            // connections are tried; a server the trickle had wedged answers none of them.
            var statuses: [Int] = []
            for _ in 0..<5 {
                let answer = try? await LocalizationFleetTests.request(
                    port: port, target: "/Results?command=defaultSetting")
                statuses.append(answer?.status ?? 0)
                if answer?.status == 200 { break }
            }
            #expect(statuses.last == 200, "statuses: \(statuses)")
        }
    }

    @Test("analyzer connections draw on the budget's analyzer share; a real request still gets in past idle ones")
    func analyzerShare() async throws {
        let small: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.limits.maximumConnections = 100
            configuration.limits.httpFirstByteTimeout = .seconds(60)
            configuration.limits.httpRequestTimeout = .seconds(60)
        }
        try await ServerHarness.run(configure: small) { server in
            let port = try #require(server.ports.analyzerPlain)
            let share = server.server.connectionLimiter.share(.analyzer)
            #expect(share == 7)
            var idle: [any Channel] = []
            // Each from a /24 of its own: one address or network may hold only part of the share.
            for index in 0..<share {
                idle.append(try await IdleConnection.open(port: port, from: "127.0.\(40 + index).2"))
            }
            // Counted as soon as the server has accepted them.
            var counted = 0
            for _ in 0..<500 {
                counted = await server.server.status().connections
                if counted >= share { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(counted == share)
            // The share is full of connections that never asked anything: a real request still gets its answer,
            // and one idle connection (the oldest admitted) is closed for it. Which one depends on the order the
            // server admitted them in: child channels are set up on several event loops, so under load it need not
            // be the order of the connects (seen: waiting for the first one to close ran into the 30 s idle timeout).
            let answer = try await LocalizationFleetTests.request(port: port, target: "/Results?command=defaultSetting")
            #expect(answer.status == 200)
            try await withThrowingTaskGroup(of: Void.self) { closes in
                for connection in idle { closes.addTask { try await connection.closeFuture.get() } }
                try await closes.next()
                let stillOpen = idle.filter(\.isActive).count
                #expect(stillOpen == share - 1)
                #expect(await server.server.status().connections <= share)
                for connection in idle { try? await connection.close() }
            }
        }
    }

    @Test("the connection budget is sized to the open-file limit")
    func budgetFollowsOpenFileLimit() async throws {
        let limited: (inout ReplayServerConfiguration) -> Void = { $0.openFileLimit = { 1000 } }
        try await ServerHarness.run(configure: limited) { server in
            let status = await server.server.status()
            #expect(status.maximumConnections == 1000 - ReplayServerConfiguration.reservedFileDescriptors)
            #expect(server.server.connectionLimiter.maximum < 4096)
        }
    }

    // MARK: defect 3: admission held by one address

    @Test("a declared real IP counts only from a trusted proxy: nobody can get a victim refused by naming it")
    func realIPOnlyFromProxies() async throws {
        try await ServerHarness.run { server in
            // 127.0.0.3 declares 127.0.0.7's address while it holds its session.
            _ = try await AdmissionTests.declare(
                server, user: "attacker01", replay: Self.replay, from: "127.0.0.3", realIP: "127.0.0.7"
            ) {
                let victim = try await AdmissionTests.declare(
                    server, user: "victim0001", replay: Self.replay, from: "127.0.0.7", realIP: "127.0.0.7")
                #expect(victim == "1;127.0.0.7;100")
            }
        }
    }

    @Test("sessions per /24 are capped: a few addresses cannot hold every slot")
    func perNetworkCap() async throws {
        let capped: (inout ReplayServerConfiguration) -> Void = { $0.limits.maximumSessionsPerNetwork = 2 }
        try await ServerHarness.run(configure: capped) { server in
            _ = try await AdmissionTests.declare(server, user: "holder0001", replay: Self.replay, from: "127.0.0.5") {
                _ = try await AdmissionTests.declare(
                    server, user: "holder0002", replay: Self.replay, from: "127.0.0.6"
                ) {
                    let third = try await AdmissionTests.declare(
                        server, user: "holder0003", replay: Self.replay, from: "127.0.0.8")
                    #expect(third == "0;3")
                    let otherNetwork = try await AdmissionTests.declare(
                        server, user: "realuser01", replay: Self.replay, from: "127.0.1.5")
                    #expect(otherNetwork == "1;127.0.1.5;100")
                }
            }
        }
    }

    @Test("an admitted session that stops advancing is closed long before the watchdog, even if it trickles bytes")
    func progressDeadline() async throws {
        let quick: (inout ReplayServerConfiguration) -> Void = { $0.limits.progressTimeout = .seconds(1) }
        try await ServerHarness.run(configure: quick) { server in
            let connection = try await RawConnection.connect(
                port: try #require(server.ports.sideChannelPlain), deadline: .seconds(30))
            let start = ContinuousClock.now
            let grant: String? = try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("idler00001;0;\(Self.replay);0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                let grant = try await peer.receive()
                // The first digits of a length prefix, one every 300 ms: never a whole message.
                let trickle = Task {
                    for _ in 0..<9 {
                        try await Task.sleep(for: .milliseconds(300))
                        try await outbound.write(ByteBuffer(string: "0"))
                    }
                }
                _ = try? await peer.drainUntilClosed()
                trickle.cancel()
                return grant
            }
            #expect(grant == "1;127.0.0.1;100")
            #expect(start.duration(to: .now) < .seconds(8))
            #expect(try await server.waitForSessions(atMost: 0))
            let events = try await server.store.sessionEvents(SessionEventQuery())
            #expect(events.contains { $0.kind == .error && $0.detail.contains("no progress") })
        }
    }

    // MARK: defect 4: another address's declaration

    @Test("a declaration of the same user from another address, refused or admitted, leaves the running test alone")
    func sameUserElsewhereDoesNotReplace() async throws {
        try await ServerHarness.run { server in
            let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
            try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("ownerusr01;0;\(Self.replay);0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                #expect(try await peer.receive() == "1;127.0.0.1;100")
                // Refused (unknown replay) from another address.
                let refused = try await AdmissionTests.declare(
                    server, user: "ownerusr01", replay: "NoSuch-01012030", from: "127.0.0.4")
                #expect(refused == "0;1")
                // Admitted from another address: a second session, the first goes on.
                _ = try await AdmissionTests.declare(
                    server, user: "ownerusr01", replay: Self.replay, from: "127.0.0.4"
                ) {
                    #expect(await server.server.status().sessions == 2)
                }
                // The owner's test goes on: the server still answers its next steps.
                try await peer.send("NoIperf")
                try await peer.send("NoMobileStats")
                let portMap = try await peer.receive()
                #expect(portMap?.isEmpty == false)
            }
        }
    }

    // MARK: defect 5: bounded writes

    @Test("refused and failed declarations write a bounded number of session-log rows")
    func boundedSessionEvents() async throws {
        let limited: (inout ReplayServerConfiguration) -> Void = { $0.sessionEventsPerMinute = 5 }
        try await ServerHarness.run(configure: limited) { server in
            let started = ContinuousClock.now
            for index in 0..<20 {
                _ = try await AdmissionTests.declare(
                    server, user: "flood\(10000 + index)", replay: "NoSuch-01012030")
            }
            let port = try #require(server.ports.sideChannelPlain)
            for index in 0..<10 {
                // A declaration, then a change spec that is not one.
                let declaration = SideChannelFramer.frame(
                    "flood\(20000 + index);0;\(Self.replay);0;1;False;127.0.0.1;3.3")
                _ = try await BadInputTests.sendAndAwaitClose(port, declaration + SideChannelFramer.frame("nonsense"))
            }
            let events = try await server.store.sessionEvents(SessionEventQuery())
            // A token bucket: a burst of 5, then one more every 12 s (5 a minute) while the flood lasts, however
            // slowly a loaded machine runs it; without the bound all 30 declarations would be written.
            let elapsed = started.duration(to: .now)
            let refills = Int(elapsed / .seconds(12)) + 1
            #expect(events.count <= 5 + refills, "\(events.count) rows in \(elapsed)")
            #expect(events.count < 30)
            // A real test is still recorded in full.
            try await BadInputTests.normalSession(server)
            let after = try await server.store.sessionEvents(SessionEventQuery())
            #expect(after.contains { $0.kind == .replayCompleted })
        }
    }

    @Test("samples for a replay that never ran are refused and not stored")
    func samplesWithoutReplay() async throws {
        try await ServerHarness.run { server in
            let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
            let answer: String? = try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("noreplay01;0;\(Self.replay);0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                #expect(try await peer.receive() == "1;127.0.0.1;100")
                try await peer.send("NoIperf")
                try await peer.send("NoMobileStats")
                _ = try await peer.receive()
                _ = try await peer.receive()
                try await peer.send("DONE;1.0")
                try? await peer.send("[[1.5,2.5,3.5,4.0],[0.1,0.2,0.3,0.4]]")
                return try? await peer.receive()
            }
            // No OK: a refusal that says why (ReplayProgress), then the server closes.
            #expect(answer?.hasPrefix("Refused;the replay did not run here: 0 of the 196 client bytes") == true)
            #expect(try await server.store.test(TestKey(userID: "noreplay01", historyCount: 1)) == nil)
        }
    }

    // MARK: defect 7: TLS suites

    @Test("TLS 1.2 offers only ECDHE with AEAD: a CBC-SHA1 client is refused, GCM and TLS 1.3 clients are served")
    func tlsSuites() async throws {
        let directory = TestResources.temporaryDirectory("wehe-server-tls-suites")
        let files = try CertificateFactory.issue(into: directory, hostNames: ["127.0.0.1"])
        let withTLS: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.sideChannelTLSPort = 0
        }
        try await ServerHarness.run(configure: withTLS) { server in
            let port = try #require(server.ports.sideChannelTLS)
            func grant(_ suites: [NIOTLSCipher]?, maximum: TLSVersion) async throws -> String? {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .file(files.caCertificate)
                tls.certificateVerification = .noHostnameVerification
                tls.maximumTLSVersion = maximum
                if let suites { tls.cipherSuiteValues = suites }
                let connection = try await RawConnection.connect(
                    port: port, tls: try NIOSSLContext(configuration: tls), deadline: .seconds(10))
                return try? await connection.channel.executeThenClose { inbound, outbound in
                    var peer = FramedPeer(inbound, outbound)
                    try await peer.send("tlsuser001;0;\(Self.replay);0;1;False;127.0.0.1;3.3")
                    try await peer.send("[-1, null, null]")
                    return try await peer.receive()
                }
            }
            let cbc = try await grant([.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA], maximum: .tlsv12)
            #expect(cbc == nil)
            let gcm = try await grant([.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256], maximum: .tlsv12)
            #expect(gcm == "1;127.0.0.1;100")
            #expect(try await server.waitForSessions(atMost: 0))
            let modern = try await grant(nil, maximum: .tlsv13)
            #expect(modern == "1;127.0.0.1;100")
        }
    }
}
