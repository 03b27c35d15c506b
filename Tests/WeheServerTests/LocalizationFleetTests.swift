import Foundation
import NIOCore
import NIOPosix
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// WeHeY on the server side across two servers: fleet-authenticated `getMeasurements`, `localize` running both
/// tests with the peer's measurements, and the bad inputs that must end in a reasoned "inconclusive".
@Suite("WeHeY localization across servers", .timeLimit(.minutes(6)))
struct LocalizationFleetTests {
    static let secret = Array("the fleet secret shared by both test servers".utf8)

    static func fleet() throws -> FleetAuthenticator { try FleetAuthenticator(secret: secret) }

    /// One HTTP request with extra headers; the status and body of the answer.
    static func request(
        host: String = "127.0.0.1", port: Int, method: String = "GET", target: String, body: String = "",
        headers: [(name: String, value: String)] = [], hostHeader: String? = nil
    ) async throws -> (status: Int, body: String) {
        let connection = try await RawConnection.connect(port: port, host: host)
        let text = try await connection.channel.executeThenClose { inbound, outbound in
            var head = "\(method) \(target) HTTP/1.1\r\nHost: \(hostHeader ?? host)\r\nConnection: close\r\n"
            for header in headers { head += "\(header.name): \(header.value)\r\n" }
            if method == "POST" {
                head += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n"
            }
            try await outbound.write(ByteBuffer(string: head + "\r\n" + body))
            var text = ""
            for try await chunk in inbound { text += String(buffer: chunk) }
            return text
        }
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        guard let range = text.range(of: "\r\n\r\n") else { return (status, text) }
        var payload = String(text[range.upperBound...])
        if text[..<range.lowerBound].lowercased().contains("transfer-encoding: chunked") {
            payload = Self.dechunk(payload)
        }
        return (status, payload)
    }

    static func dechunk(_ body: String) -> String {
        var rest = Substring(body)
        var out = ""
        while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = lineEnd.upperBound
            let bytes = Array(rest[start...].utf8)
            out += String(decoding: bytes.prefix(size), as: UTF8.self)
            rest = Substring(String(decoding: bytes.dropFirst(size + 2), as: UTF8.self))
        }
        return out
    }

    static func measurementTarget(_ type: String, user: String, historyCount: Int, kwargs: String = "{}") -> String {
        "/Results?"
            + FormParameters.encode([
                ("command", "getMeasurements"), ("measurementType", type), ("userID", user),
                ("historyCount", String(historyCount)), ("testID", "0"), ("kwargs", kwargs),
            ])
    }

    /// 30 s of 10 ms readings; in the listed seconds every 10th reading is a retransmission.
    static func lossRecord(user: String, historyCount: Int, lossySeconds: Set<Int>, duration: Int = 30)
        -> ReplayLossRecord
    {
        let samples = (1...(duration * 100)).map { index -> ReplayLossRecord.Sample in
            let lost = lossySeconds.contains((index - 1) / 100) && index % 10 == 0
            return .init(time: Double(index) / 100, bytesSent: 1448, bytesLost: lost ? 1448 : 0)
        }
        return ReplayLossRecord(
            key: ReplayKey(userID: user, historyCount: historyCount, testID: 0), recordedAt: Date(),
            minimumRTT: 0.02, duration: Double(duration), samples: samples)
    }

    static let single = (0..<80).map { 4 + Double($0 % 9) * 0.05 }
    static let half = (0..<80).map { 2 + Double($0 % 7) * 0.03 }

    static func localizeBody(user: String, first: Int, second: Int, single: Int, replay: String = "TinyWeb") -> String {
        let info1 = FormParameters.encodeComponent(
            #"{"server":"127.0.0.1","historyCount":"\#(first)","replayPort":"80","replayName":"\#(replay)"}"#)
        let info2 = FormParameters.encodeComponent(
            #"{"server":"127.0.0.2","historyCount":"\#(second)","replayPort":"80","replayName":"\#(replay)"}"#)
        let singleInfo = FormParameters.encodeComponent(
            #"{"singleReplay_userID":"\#(user)","singleReplay_server":"127.0.0.1","singleReplay_historyCount":"\#(single)"}"#
        )
        return "command=localize&userID=\(FormParameters.encodeComponent(user))&testID=0&server1Info=\(info1)"
            + "&server2Info=\(info2)&singleServerInfo=\(singleInfo)&kwargs=%7B%7D"
    }

    @Test("getMeasurements answers fleet members only: unsigned, wrongly signed and stale requests get 403")
    func authentication() async throws {
        let fleet = try Self.fleet()
        let stranger = try FleetAuthenticator(secret: Array("some other secret, also 32 bytes long".utf8))
        let withFleet: (inout ReplayServerConfiguration) -> Void = { $0.fleetAuthenticator = fleet }
        try await ServerHarness.run(configure: withFleet) { server in
            let port = try #require(server.ports.analyzerPlain)
            try await AnalyzerTests.seed(
                server.store, user: "@fleet0001", historyCount: 5, original: Self.half, control: Self.half)
            try await server.store.save(loss: Self.lossRecord(user: "@fleet0001", historyCount: 5, lossySeconds: [2]))
            for type in ["clientXputs", "minRttAndDuration", "lossRatios"] {
                let target = Self.measurementTarget(type, user: "@fleet0001", historyCount: 5)
                let unsigned = try await Self.request(port: port, target: target)
                #expect(unsigned.status == 403)
                #expect(unsigned.body.contains("no fleet credentials"))
                let wrong = try await Self.request(
                    port: port, target: target,
                    headers: stranger.headers(method: "GET", host: "127.0.0.1", target: target, now: Date()))
                #expect(wrong.status == 403)
                #expect(wrong.body.contains("does not match"))
                let stale = try await Self.request(
                    port: port, target: target,
                    headers: fleet.headers(
                        method: "GET", host: "127.0.0.1", target: target, now: Date().addingTimeInterval(-7200)))
                #expect(stale.status == 403)
                #expect(stale.body.contains("clocks disagree"))
                let tampered = try await Self.request(
                    port: port, target: target.replacingOccurrences(of: "historyCount=5", with: "historyCount=6"),
                    headers: fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: Date()))
                #expect(tampered.status == 403)
                let signed = try await Self.request(
                    port: port, target: target,
                    headers: fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: Date()))
                #expect(signed.status == 200)
                let json = try JSONValue.parse(Array(signed.body.utf8))
                #expect(json["success"] == .bool(true))
                #expect(json["measurements"]?["type"] == .string(type))
            }
            func signed(_ type: String, kwargs: String = "{}") async throws -> JSONValue {
                let target = Self.measurementTarget(type, user: "@fleet0001", historyCount: 5, kwargs: kwargs)
                let answer = try await Self.request(
                    port: port, target: target,
                    headers: fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: Date()))
                return try #require(try JSONValue.parse(Array(answer.body.utf8))["measurements"]?["result"])
            }
            let summary = try await signed("minRttAndDuration")
            #expect(summary["minRtt"] == .number(0.02, text: "0.02"))
            #expect(summary["duration"] == .number(30, text: "30.0"))
            let ratios = try await signed("lossRatios", kwargs: #"{"intervalSizes":[1.0]}"#)
            #expect(
                ratios["columns"] == .array([.string("intervalSize"), .string("intervalEnd"), .string("lossRatio")]))
            guard case .array(let rows)? = ratios["data"] else {
                Issue.record("no data frame rows")
                return
            }
            #expect(rows.count == 30)
            #expect(
                rows.dropFirst(2).first
                    == .array([
                        .number(1, text: "1.0"), .number(3, text: "3.0"),
                        .number(10.0 / 101.0, text: "\(10.0 / 101.0)"),
                    ]))
            let readings = try await signed("lossRatios", kwargs: #"{"resolution":"readings"}"#)
            guard case .array(let readingRows)? = readings["data"] else {
                Issue.record("no reading rows")
                return
            }
            #expect(readingRows.count == 3000)
        }
        // A server without a fleet secret answers nobody, however the request is signed.
        try await ServerHarness.run { server in
            let port = try #require(server.ports.analyzerPlain)
            let target = Self.measurementTarget("clientXputs", user: "@fleet0001", historyCount: 5)
            let answer = try await Self.request(
                port: port, target: target,
                headers: fleet.headers(method: "GET", host: "127.0.0.1", target: target, now: Date()))
            #expect(answer.status == 403)
            #expect(answer.body.contains("no fleet secret"))
        }
    }

    /// Runs server 2 on 127.0.0.2 and server 1 on 127.0.0.1 on the same analyzer port (server 2 picks it), both
    /// with the fleet secret; `secondClock` skews server 2's wall clock.
    /// The loss timeline of `key` once the server has stored it (polled for up to 5 s), or nil.
    static func storedLoss(_ server: ServerHarness.Running, _ key: ReplayKey) async throws -> ReplayLossRecord? {
        for _ in 0..<250 {
            if let loss = try await server.store.loss(key) { return loss }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await server.store.loss(key)
    }

    /// A CA and a certificate for both loopback servers (IP subject alternative names 127.0.0.1 and 127.0.0.2).
    static func certificates() throws -> CertificateFactory.Output {
        try CertificateFactory.issue(
            into: TestResources.temporaryDirectory("wehe-fleet-certs"), hostNames: ["127.0.0.1", "127.0.0.2"])
    }

    /// Server 1 configured to ask its fleet peer 127.0.0.2 on `port` over HTTPS, checking the peer against `ca`.
    static func askingPeer(port: Int, ca: String?, fleet: FleetAuthenticator) -> (inout ReplayServerConfiguration) ->
        Void
    {
        { configuration in
            configuration.peerAnalyzerPort = port
            configuration.peerCACertificatePath = ca
            configuration.fleetPeers = ["127.0.0.2"]
            configuration.fleetAuthenticator = fleet
        }
    }

    /// Runs server 2 on 127.0.0.2 (HTTPS analyzer) and server 1 on 127.0.0.1, both with the fleet secret; server 1
    /// asks server 2 over HTTPS, checking its certificate and name against the CA. `secondClock` skews server 2's
    /// wall clock. The body gets server 1's plain analyzer port.
    static func withPair(
        secondClockSkew: TimeInterval = 0,
        _ body:
            @Sendable (_ first: ServerHarness.Running, _ second: ServerHarness.Running, _ port: Int) async throws
            -> Void
    ) async throws {
        let fleet = try Self.fleet()
        let files = try Self.certificates()
        let secondServer: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.bindAddress = "127.0.0.2"
            configuration.fleetAuthenticator = fleet
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.analyzerTLSPort = 0
            configuration.now = { Date().addingTimeInterval(secondClockSkew) }
        }
        try await ServerHarness.run(configure: secondServer) { second in
            let peerPort = try #require(second.ports.analyzerTLS)
            try await ServerHarness.run(
                configure: Self.askingPeer(port: peerPort, ca: files.caCertificate, fleet: fleet)
            ) { first in
                try await body(first, second, try #require(first.ports.analyzerPlain))
            }
        }
    }

    /// A single test (history count 5, on server 1), then a pair whose halves sum to it (6 on server 1, 7 on
    /// server 2) and whose loss timelines drop in the same seconds: a shared per-user policer, as both tests see it.
    static func seedSharedPolicer(
        _ first: ServerHarness.Running, _ second: ServerHarness.Running, user: String
    ) async throws {
        try await AnalyzerTests.seed(
            first.store, user: user, historyCount: 5, original: Self.single, control: Self.single)
        try await AnalyzerTests.seed(
            first.store, user: user, historyCount: 6, original: Self.half, control: Self.half)
        try await AnalyzerTests.seed(
            second.store, user: user, historyCount: 7, original: Self.half, control: Self.half)
        let lossy: Set<Int> = [2, 3, 9, 14, 15, 21, 26]
        try await first.store.save(loss: Self.lossRecord(user: user, historyCount: 6, lossySeconds: lossy))
        try await second.store.save(loss: Self.lossRecord(user: user, historyCount: 7, lossySeconds: lossy))
    }

    @Test("a UDP replay: correlated loss timelines are not used (a common schedule correlates them anywhere)")
    func udpSkipsLossCorrelation() async throws {
        try await Self.withPair { first, second, port in
            let user = "@wehey0109"
            // The same seconds lossy on both branches: the TCP test below calls this correlated.
            try await Self.seedSharedPolicer(first, second, user: user)
            let queued = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5, replay: "TinyCall-11212026"))
            #expect(queued.body == #"{"success": true}"#)
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.correlationPValues.isEmpty == true)
            #expect(run.summary?.averageLoss.isEmpty == true)
            #expect(run.summary?.note?.contains("loss-correlation test skipped: UDP replay") == true)
            // The throughput test still ran and decides: the pair's sum matches the single replay.
            #expect(run.summary?.mwuPValue != nil)
            #expect(run.summary?.verdict == .accessNetwork)
        }
    }

    @Test("localize on 127.0.0.1 fetches 127.0.0.2's samples and loss timeline and computes both tests")
    func bothTests() async throws {
        // Server 2's wall clock is two minutes ahead: timelines align by each replay's own start all the same.
        try await Self.withPair(secondClockSkew: 120) { first, second, port in
            let user = "@wehey0101"
            // The same policer drops on both branches in the same seconds.
            try await Self.seedSharedPolicer(first, second, user: user)
            let queued = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            #expect(queued.body == #"{"success": true}"#)
            let answer = try await Self.request(
                port: port, target: "/Results?command=localizeResult&userID=\(user)&historyCounts=[6,%207]&testID=0")
            let json = try JSONValue.parse(Array(answer.body.utf8))
            let response = try #require(json["response"])
            #expect(
                response["localization_tests"]
                    == .array([.string("pairsum_vs_single_xput"), .string("loss_correlation")]))
            #expect(response["historyCounts"] == .array([.number(6, text: "6"), .number(7, text: "7")]))
            guard case .array(let pValues)? = response["loss_correlation"]?["corrPValues"],
                case .array(let sizes)? = response["loss_correlation"]?["intervalSizes"],
                case .array(let averageLoss)? = response["loss_correlation"]?["simReplaysAvgLoss"]
            else {
                Issue.record("loss_correlation incomplete: \(answer.body)")
                return
            }
            #expect(!pValues.isEmpty)
            #expect(pValues.count == sizes.count)
            let significant = pValues.filter { value in
                if case .number(let p, _) = value { return p < 0.05 }
                return false
            }
            #expect(Double(significant.count) / Double(pValues.count) >= 0.5)
            #expect(averageLoss.count == 2)
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .accessNetwork)
            #expect(run.summary?.note == nil)
        }
    }

    @Test("losses at different times on the two branches do not correlate")
    func independentLosses() async throws {
        try await Self.withPair { first, second, port in
            let user = "@wehey0102"
            try await first.store.save(
                loss: Self.lossRecord(user: user, historyCount: 6, lossySeconds: [1, 5, 9, 13, 17, 21, 25]))
            try await second.store.save(
                loss: Self.lossRecord(user: user, historyCount: 7, lossySeconds: [3, 7, 11, 15, 19, 23, 27]))
            _ = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            let summary = try #require(run.summary)
            #expect(!summary.correlationPValues.isEmpty)
            #expect(summary.correlationPValues.allSatisfy { $0 >= 0.05 })
            // No throughput samples anywhere: that test is absent, and the loss test alone says "no evidence".
            #expect(summary.mwuPValue == nil)
            #expect(summary.verdict == .noEvidence)
            #expect(summary.note?.contains("refused clientXputs") == true)
        }
    }

    @Test("a peer that is down leaves both tests without data: inconclusive, with the reason")
    func peerDown() async throws {
        // A port on 127.0.0.2 that refuses connections and stays reserved for the test (a closed listener's port
        // was once handed to another test's TLS server in a full run).
        let refusing = try RefusingPort(host: "127.0.0.2")
        defer { withExtendedLifetime(refusing) {} }
        let closedPort = refusing.port
        let fleet = try Self.fleet()
        let pairedWithDownPeer = Self.askingPeer(
            port: closedPort, ca: try Self.certificates().caCertificate, fleet: fleet)
        try await ServerHarness.run(configure: pairedWithDownPeer) { server in
            let user = "@wehey0103"
            let port = try #require(server.ports.analyzerPlain)
            try await AnalyzerTests.seed(
                server.store, user: user, historyCount: 5, original: Self.single, control: Self.single)
            try await AnalyzerTests.seed(
                server.store, user: user, historyCount: 6, original: Self.half, control: Self.half)
            try await server.store.save(loss: Self.lossRecord(user: user, historyCount: 6, lossySeconds: [2]))
            let queued = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            #expect(queued.body == #"{"success": true}"#)
            let answer = try await Self.request(
                port: port, target: "/Results?command=localizeResult&userID=\(user)&historyCounts=[6,%207]&testID=0")
            let response = try #require(try JSONValue.parse(Array(answer.body.utf8))["response"])
            #expect(response["localization_tests"] == .array([]))
            guard case .string(let note)? = response["note"] else {
                Issue.record("no note in \(answer.body)")
                return
            }
            #expect(note.contains("127.0.0.2:\(closedPort) unreachable"))
            let run = try #require(try await server.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .inconclusive)
        }
    }

    @Test("a peer that accepts but never answers is given up after the peer timeout")
    func slowPeer() async throws {
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.2", port: 0).get()
        let silentPort = try #require(silent.localAddress?.port)
        let fleet = try Self.fleet()
        let asking = Self.askingPeer(port: silentPort, ca: try Self.certificates().caCertificate, fleet: fleet)
        let pairedWithSilentPeer: (inout ReplayServerConfiguration) -> Void = {
            asking(&$0)
            $0.peerTimeout = .seconds(1)
        }
        try await ServerHarness.run(configure: pairedWithSilentPeer) { server in
            let user = "@wehey0104"
            let port = try #require(server.ports.analyzerPlain)
            try await AnalyzerTests.seed(
                server.store, user: user, historyCount: 6, original: Self.half, control: Self.half)
            let start = ContinuousClock.now
            _ = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            #expect(start.duration(to: .now) < .seconds(10))
            let run = try #require(try await server.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .inconclusive)
            #expect(run.summary?.note?.contains("no answer within") == true)
        }
        try await silent.close()
    }

    @Test("servers whose clocks disagree by more than the signature window: refused, inconclusive, and said so")
    func clockSkew() async throws {
        try await Self.withPair(secondClockSkew: 3600) { first, second, port in
            let user = "@wehey0105"
            try await AnalyzerTests.seed(
                first.store, user: user, historyCount: 5, original: Self.single, control: Self.single)
            try await AnalyzerTests.seed(
                first.store, user: user, historyCount: 6, original: Self.half, control: Self.half)
            try await AnalyzerTests.seed(
                second.store, user: user, historyCount: 7, original: Self.half, control: Self.half)
            try await first.store.save(loss: Self.lossRecord(user: user, historyCount: 6, lossySeconds: [2, 5]))
            try await second.store.save(loss: Self.lossRecord(user: user, historyCount: 7, lossySeconds: [2, 5]))
            _ = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.verdict == .inconclusive)
            #expect(run.summary?.note?.contains("clocks disagree") == true)
        }
    }

    @Test("replays too short for 30 intervals of 10 × RTT: the loss test is absent and the note says why")
    func tooFewIntervals() async throws {
        try await Self.withPair { first, second, port in
            let user = "@wehey0106"
            try await first.store.save(
                loss: Self.lossRecord(user: user, historyCount: 6, lossySeconds: [1], duration: 5))
            try await second.store.save(
                loss: Self.lossRecord(user: user, historyCount: 7, lossySeconds: [1], duration: 5))
            _ = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            #expect(run.summary?.averageLoss.isEmpty == true)
            #expect(run.summary?.verdict == .inconclusive)
            #expect(run.summary?.note?.contains("loss-correlation test skipped: no interval size") == true)
        }
    }

    @Test("real TCP replays to both servers leave loss timelines that localize takes in")
    func realReplays() async throws {
        let trace = try SideChannelTests.fixture("TinyWeb_11212026.pcap_client_all.json")
        try await Self.withPair { first, second, port in
            let user = "@wehey0107"
            var client = ScriptedClient()
            client.userID = user
            client.historyCount = 6
            let firstOutcome = try await client.run(trace, testID: 0, server: first)
            #expect(firstOutcome.responseBytes > 0)
            client.historyCount = 7
            let outcome = try await client.run(
                trace, testID: 0, server: second, sidePort: second.ports.sideChannelPlain, host: "127.0.0.2")
            #expect(outcome.grant.hasPrefix("1;"))
            // A replay connection stores its loss timeline when it ends, which may be just after the side channel.
            let firstLoss = try #require(
                try await Self.storedLoss(first, ReplayKey(userID: user, historyCount: 6, testID: 0)))
            let secondLoss = try #require(
                try await Self.storedLoss(second, ReplayKey(userID: user, historyCount: 7, testID: 0)))
            // The final reading is taken after the client's end of stream: every response byte is in the timeline.
            #expect(firstLoss.samples.reduce(0) { $0 + $1.bytesSent } >= Double(firstOutcome.responseBytes))
            #expect(secondLoss.samples.reduce(0) { $0 + $1.bytesSent } >= Double(outcome.responseBytes))
            #expect(secondLoss.minimumRTT != nil)
            _ = try await Self.request(
                port: port, method: "POST", target: "/Results",
                body: Self.localizeBody(user: user, first: 6, second: 7, single: 5))
            let run = try #require(try await first.store.localization(userID: user, historyCounts: [6, 7]))
            // A sub-second loopback replay holds no 30 intervals: the loss test is absent, for that reason only.
            // Both timelines reached the analysis: the test ran (two average losses), or it stopped only because a
            // sub-second loopback replay holds no 30 intervals of 10 × RTT.
            let note = run.summary?.note ?? ""
            #expect(
                run.summary?.averageLoss.count == 2 || note.contains("loss-correlation test skipped: no interval size"))
            #expect(!note.contains("loss data missing"))
            #expect(!note.contains("no RTT"))
            #expect(!note.contains("127.0.0.2"))
        }
    }
}
