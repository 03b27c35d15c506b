import Foundation
import NIOCore
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Admission", .timeLimit(.minutes(6)))
struct AdmissionTests {

    /// Opens a side channel, declares a replay and returns the grant; the connection stays open while `hold` runs.
    static func declare(
        _ server: ServerHarness.Running,
        user: String,
        replay: String,
        from source: String = "127.0.0.1",
        realIP: String = "127.0.0.1",
        hold: @Sendable () async throws -> Void = {}
    ) async throws -> String {
        let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0, from: source)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var peer = FramedPeer(inbound, outbound)
            try await peer.send("\(user);0;\(replay);0;1;False;\(realIP);3.3")
            try await peer.send("[-1, null, null]")
            let grant = try await peer.receive() ?? "<closed>"
            try await hold()
            return grant
        }
    }

    @Test("an unknown replay name is refused with 0;1")
    func unknownReplay() async throws {
        try await ServerHarness.run { server in
            #expect(try await Self.declare(server, user: "userone001", replay: "NoSuch-01012030") == "0;1")
            let events = try await server.store.sessionEvents(SessionEventQuery())
            #expect(events.contains { $0.kind == .admissionDenied && $0.detail.hasPrefix("0;1") })
        }
    }

    @Test("a second user from the same address is refused with 0;2;100 while the first holds it")
    func addressBusy() async throws {
        try await ServerHarness.run { server in
            let first = try await Self.declare(server, user: "userone001", replay: "TinyWeb-11212026") {
                let second = try await Self.declare(server, user: "usertwo002", replay: "TinyWeb-11212026")
                #expect(second == "0;2;100")
                let other = try await Self.declare(
                    server, user: "userthree3", replay: "TinyWeb-11212026", from: "127.0.0.9")
                #expect(other == "1;127.0.0.9;100")
            }
            #expect(first == "1;127.0.0.1;100")
            // Once the server has released the first side channel (it sees the close a moment later), the address is
            // free again.
            #expect(try await server.waitForSessions(atMost: 0))
            #expect(try await Self.declare(server, user: "usertwo002", replay: "TinyWeb-11212026") == "1;127.0.0.1;100")
        }
    }

    @Test("from a trusted proxy, a real IP that differs from the peer and from 127.0.0.1 is the admission key")
    func realIPKey() async throws {
        let loopback = try LocalizationPair.Prefix("127.0.0.0/8")
        let proxied: (inout ReplayServerConfiguration) -> Void = { $0.trustedProxies = [loopback] }
        try await ServerHarness.run(configure: proxied) { server in
            _ = try await Self.declare(server, user: "userone001", replay: "TinyWeb-11212026", realIP: "203.0.113.5") {
                let sameReal = try await Self.declare(
                    server, user: "usertwo002", replay: "TinyWeb-11212026", from: "127.0.0.3", realIP: "203.0.113.5")
                #expect(sameReal == "0;2;100")
                let samePeer = try await Self.declare(server, user: "userthree3", replay: "TinyWeb-11212026")
                #expect(samePeer == "1;127.0.0.1;100")
            }
        }
    }

    @Test("the per-user policy admits several users from one address")
    func perUserPolicy() async throws {
        let perUser: (inout ReplayServerConfiguration) -> Void = { $0.admission = .perUser }
        try await ServerHarness.run(configure: perUser) { server in
            _ = try await Self.declare(server, user: "userone001", replay: "TinyWeb-11212026") {
                let second = try await Self.declare(server, user: "usertwo002", replay: "TinyWeb-11212026")
                #expect(second == "1;127.0.0.1;100")
            }
        }
    }

    @Test("the session limit refuses with 0;3")
    func lowResources() async throws {
        let oneSession: (inout ReplayServerConfiguration) -> Void = { $0.limits.maximumSessions = 1 }
        try await ServerHarness.run(configure: oneSession) { server in
            _ = try await Self.declare(server, user: "userone001", replay: "TinyWeb-11212026") {
                let refused = try await Self.declare(
                    server, user: "usertwo002", replay: "TinyWeb-11212026", from: "127.0.0.4")
                #expect(refused == "0;3")
            }
        }
    }

    @Test("a user's new side channel replaces its earlier one, which is closed")
    func sameUserReplaces() async throws {
        try await ServerHarness.run { server in
            let connection = try await RawConnection.connect(port: server.ports.sideChannelPlain ?? 0)
            try await connection.channel.executeThenClose { inbound, outbound in
                var peer = FramedPeer(inbound, outbound)
                try await peer.send("userone001;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3")
                try await peer.send("[-1, null, null]")
                #expect(try await peer.receive() == "1;127.0.0.1;100")
                let again = try await Self.declare(server, user: "userone001", replay: "TinyWeb-11212026")
                #expect(again == "1;127.0.0.1;100")
                #expect(try await peer.receive() == nil)
            }
        }
    }
}
