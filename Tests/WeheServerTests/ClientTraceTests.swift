import Foundation
import Testing
import WeheCore
import WeheServer
import WeheTestKit
import WeheWire

/// Recorded tests a client brings (`--accept-client-traces`): uploaded on the analyzer, replayed once to the same
/// user id from the same address, refused when the option is off or a bound is passed.
@Suite("Client-brought recorded tests", .timeLimit(.minutes(6)))
struct ClientTraceTests {
    /// A TCP test the fixture catalogue does not have, to a server address it does not name either, on port 80
    /// (which the fixtures' TinyWeb replays): two requests, 30 000 then 5 000 response bytes.
    static func trace(name: String = "MyRecording-11272026", port: UInt16 = 80, lastTime: Double = 0.4)
        -> ReplayTrace
    {
        let pair = CSPair(clientAddress: "10.0.0.2", clientPort: 51_000, serverAddress: "203.0.113.9", serverPort: port)
        let packets = [
            ReplayPacket(
                csPair: pair, payload: Array("GET /a HTTP/1.1\r\nHost: films.example\r\n\r\n".utf8), timestamp: 0,
                kind: .tcp(responseLength: 30_000, responseHash: String(repeating: "a", count: 40))),
            ReplayPacket(
                csPair: pair, payload: Array("GET /b HTTP/1.1\r\nHost: films.example\r\n\r\n".utf8),
                timestamp: lastTime, kind: .tcp(responseLength: 5000, responseHash: String(repeating: "b", count: 40))),
        ]
        return ReplayTrace(packets: packets, udpClientPorts: [], tcpCSPairs: [pair.rawValue], name: name)
    }

    static func upload(
        _ trace: ReplayTrace, userID: String = "@abcdef123", server: ServerHarness.Running, from source: String? = nil
    ) async throws -> (status: Int, body: JSONValue) {
        let text = try await HTTPProbe.request(
            port: server.ports.analyzerPlain ?? 0, method: "POST", path: "/client-traces?userID=\(userID)",
            body: ClientTraceEncoder().encode(trace), from: source)
        let body = try JSONValue.parse(Array(text.utf8))
        return (body["success"] == .bool(true) ? 200 : 400, body)
    }

    static func error(_ body: JSONValue) -> String {
        if case .string(let text)? = body["error"] { return text }
        return "<no error in \(body)>"
    }

    static func accepting(_ configure: @escaping (inout ClientTracePolicy) -> Void = { _ in })
        -> (inout ReplayServerConfiguration) -> Void
    {
        { configuration in
            var policy = ClientTracePolicy()
            configure(&policy)
            configuration.clientTraces = policy
        }
    }

    @Test("off by default: the upload is refused with the operator hint and the unknown test stays 0;1")
    func offByDefault() async throws {
        try await ServerHarness.run { server in
            let trace = Self.trace()
            let (status, body) = try await Self.upload(trace, server: server)
            #expect(status != 200)
            #expect(Self.error(body).contains("ask its operator to enable --accept-client-traces"))
            let known = try await HTTPProbe.request(
                port: server.ports.analyzerPlain ?? 0, path: "/client-traces?replayName=\(trace.name)")
            #expect(try JSONValue.parse(Array(known.utf8))["accepts"] == .bool(false))
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.grant.hasPrefix("0;1"), "\(outcome.grant)")
        }
    }

    @Test(
        "an uploaded test runs once for its uploader, with its own port map and the derived responses; then it is gone")
    func runsOnceForTheUploader() async throws {
        try await ServerHarness.run(configure: Self.accepting()) { server in
            let trace = Self.trace()
            let (status, body) = try await Self.upload(trace, server: server)
            #expect(status == 200, "\(body)")
            #expect(body["replayName"] == .string(trace.name))
            let outcome = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(outcome.grant.hasPrefix("1;"), "\(outcome.grant)")
            // The port map names the uploaded trace's own server address on a port the server listens on.
            let address = try #require(trace.flows.first).serverAddress
            #expect(address != "198.018.002.002")
            let endpoint = outcome.portMap?.endpoint(udp: false, serverAddress: address, serverPort: 80)
            #expect(endpoint?.port == server.tcp(80))
            // The server sent what it derived from the client trace: the recorded response sizes.
            #expect(outcome.responseBytes == 35_000)
            #expect(outcome.okAfterSamples == "OK")
            #expect(try await server.waitForSessions(atMost: 0))
            // Taken by that replay: a second declaration finds nothing.
            let again = try await ScriptedClient().run(trace, testID: 0, server: server)
            #expect(again.grant.hasPrefix("0;1"), "\(again.grant)")
        }
    }

    @Test("another user id or another address cannot replay someone's upload")
    func onlyTheUploader() async throws {
        try await ServerHarness.run(configure: Self.accepting()) { server in
            let trace = Self.trace()
            #expect(try await Self.upload(trace, userID: "@owner0001", server: server).status == 200)
            var otherUser = ScriptedClient()
            otherUser.userID = "@other0002"
            #expect(try await otherUser.run(trace, testID: 0, server: server).grant.hasPrefix("0;1"))
            var otherAddress = ScriptedClient()
            otherAddress.userID = "@owner0001"
            otherAddress.source = "127.0.0.2"
            #expect(try await otherAddress.run(trace, testID: 0, server: server).grant.hasPrefix("0;1"))
            #expect(try await server.waitForSessions(atMost: 0))
            var owner = ScriptedClient()
            owner.userID = "@owner0001"
            let outcome = try await owner.run(trace, testID: 0, server: server)
            #expect(outcome.grant.hasPrefix("1;"), "\(outcome.grant)")
        }
    }

    @Test("an oversized, over-long, malformed or off-port trace is refused with its reason")
    func boundsRefused() async throws {
        try await ServerHarness.run(
            configure: Self.accepting {
                $0.maximumUploadBytes = 2000
                $0.maximumDurationSeconds = 60
            }
        ) { server in
            let large = Self.trace(name: "Large-11272026")
            var padded = large
            padded.packets[1].payload = [UInt8](repeating: 0x41, count: 3000)
            let (_, tooLarge) = try await Self.upload(padded, server: server)
            #expect(Self.error(tooLarge).contains("larger than this server takes (2000 bytes)"), "\(tooLarge)")
            let (_, tooLong) = try await Self.upload(Self.trace(name: "Long-11272026", lastTime: 90), server: server)
            #expect(Self.error(tooLong).contains("lasts 90 s; this server takes at most 60 s"), "\(tooLong)")
            let (_, offPort) = try await Self.upload(Self.trace(name: "Port-11272026", port: 25), server: server)
            #expect(Self.error(offPort).contains("does not replay TCP port(s) 25"), "\(offPort)")
            let text = try await HTTPProbe.request(
                port: server.ports.analyzerPlain ?? 0, method: "POST", path: "/client-traces?userID=@abcdef123",
                body: "[[], [], []")
            #expect(Self.error(try JSONValue.parse(Array(text.utf8))).contains("not a client trace"))
            let known = Self.trace(name: "TinyWeb-11212026")
            let (_, duplicate) = try await Self.upload(known, server: server)
            #expect(Self.error(duplicate).contains("has its own test named TinyWeb-11212026"), "\(duplicate)")
        }
    }

    @Test("the uploads per network and the uploads held per network are bounded")
    func perNetworkLimits() async throws {
        try await ServerHarness.run(configure: Self.accepting { $0.uploadsPerNetwork = 3 }) { server in
            for index in 0..<3 {
                let trace = Self.trace(name: "Quota\(index)-11272026")
                #expect(try await Self.upload(trace, server: server).status == 200)
            }
            // Same /24 from another address: the network's quota is used up.
            let (status, body) = try await Self.upload(
                Self.trace(name: "Quota3-11272026"), server: server, from: "127.0.0.9")
            #expect(status != 200)
            #expect(Self.error(body).contains("made its 3 uploads per 24 h"), "\(body)")
        }
        try await ServerHarness.run(configure: Self.accepting { $0.heldPerNetwork = 2 }) { server in
            #expect(try await Self.upload(Self.trace(name: "HeldA-11272026"), server: server).status == 200)
            #expect(try await Self.upload(Self.trace(name: "HeldB-11272026"), server: server).status == 200)
            let (_, body) = try await Self.upload(Self.trace(name: "HeldC-11272026"), server: server)
            #expect(Self.error(body).contains("holds its maximum of 2 uploaded tests"), "\(body)")
            // Running one frees its place.
            #expect(
                try await ScriptedClient().run(Self.trace(name: "HeldA-11272026"), testID: 0, server: server)
                    .grant.hasPrefix("1;"))
            #expect(try await server.waitForSessions(atMost: 0))
            #expect(try await Self.upload(Self.trace(name: "HeldC-11272026"), server: server).status == 200)
        }
    }

    @Test("--keep-client-traces writes each accepted upload, as sent, within its disk budget")
    func keptWithinBudget() throws {
        let directory = TestResources.temporaryDirectory("wehe-kept-traces")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let first = Array(ClientTraceEncoder().encode(Self.trace(name: "KeptA-11272026")).utf8)
        var policy = ClientTracePolicy()
        policy.keepDirectory = directory
        policy.keepDiskBudgetBytes = first.count + 10
        let store = ClientTraceStore(
            policy: policy, catalogue: ReplayCatalogue(replays: []), tcpPorts: [80: 8080], udpPorts: [:])
        _ = try store.upload(first, userID: "@abcdef123", address: "127.0.0.1")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(files.count == 1)
        #expect(files.first?.hasSuffix("-KeptA-11272026.pcap_client_all.json") == true, "\(files)")
        let written = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + (files.first ?? "")))
        #expect(Array(written) == first)
        // Past the budget: the upload is held (it runs) but not written.
        let second = Array(ClientTraceEncoder().encode(Self.trace(name: "KeptB-11272026")).utf8)
        #expect(try store.upload(second, userID: "@abcdef123", address: "127.0.0.1").replayName == "KeptB-11272026")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 1)
        #expect(store.count == 2)
    }

    @Test("uploads from one network that arrive together are held at most up to the network's bound")
    func heldBoundUnderConcurrentUploads() async throws {
        var policy = ClientTracePolicy()
        policy.uploadsPerNetwork = 10_000
        let store = ClientTraceStore(
            policy: policy, catalogue: ReplayCatalogue(replays: []), tcpPorts: [80: 8080], udpPorts: [:])
        // Eight threads of their own, fifteen uploads each from one /24, as the attack suite's flood sends them: the
        // check of the bound and the insertion used to be two steps with the parsing between them, so uploads that
        // passed the check together were all held.
        let bodies = (0..<120).map { Array(ClientTraceEncoder().encode(Self.trace(name: "Flood\($0)-11272026")).utf8) }
        let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    await onOwnThread {
                        var count = 0
                        for index in stride(from: worker, to: 120, by: 8) {
                            if (try? store.upload(
                                bodies[index], userID: "@flood0001", address: "127.0.10.\(1 + index)")) != nil
                            {
                                count += 1
                            }
                        }
                        return count
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(accepted == policy.heldPerNetwork)
        #expect(store.count == policy.heldPerNetwork)
    }

    @Test("an upload expires after its lifetime")
    func expires() {
        var policy = ClientTracePolicy()
        policy.lifetime = .seconds(60)
        let catalogue = ReplayCatalogue(replays: [])
        let store = ClientTraceStore(policy: policy, catalogue: catalogue, tcpPorts: [80: 8080], udpPorts: [:])
        let start = ContinuousClock.now
        let trace = Self.trace()
        #expect(throws: Never.self) {
            _ = try store.upload(
                Array(ClientTraceEncoder().encode(trace).utf8), userID: "@abcdef123", address: "127.0.0.1", now: start)
        }
        #expect(store.count == 1)
        #expect(
            store.take(name: trace.name, userID: "@abcdef123", address: "127.0.0.1", now: start + .seconds(61)) == nil)
        #expect(store.count == 0)
    }
}
