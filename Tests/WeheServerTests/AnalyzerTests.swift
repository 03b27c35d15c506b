import Foundation
import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

@Suite("Analyzer API", .timeLimit(.minutes(6)))
struct AnalyzerTests {
    static func seed(
        _ store: InMemoryResultStore, user: String, historyCount: Int, original: [Double], control: [Double]
    )
        async throws
    {
        let metadata = TestMetadata(
            replayName: "TinyWeb-11212026", startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        for (testID, values) in [(0, original), (1, control)] {
            try await store.save(
                replay: ReplayRecord(
                    key: ReplayKey(userID: user, historyCount: historyCount, testID: testID),
                    replayName: testID == 0 ? "TinyWeb-11212026" : "TinyWebRandom-11212026",
                    samples: ThroughputSeries(mbps: values, interval: 0.1),
                    receivedAt: Date()
                ),
                metadata: metadata
            )
        }
    }

    @Test(
        "errors are JSON with success false",
        arguments: [
            ("/Results", #"{"success": false, "error": "command not provided"}"#),
            ("/Results?command=nonsense", #"{"success": false, "error": "unknown command"}"#),
            ("/Results?command=singleResult&historyCount=1&testID=1", #"{"success": false, "missing": "'userID'"}"#),
            (
                "/Results?command=singleResult&userID=@abc123456&historyCount=x&testID=1",
                #"{"success": false, "value error": "invalid literal for int() with base 10: 'x'"}"#
            ),
            (
                "/Results?command=singleResult&userID=@unknown00&historyCount=3&testID=1",
                #"{"success": false, "error": "No result found"}"#
            ),
            ("/Results?command=getServers", #"{"success": false, "error": "No Y-topology found."}"#),
            (
                "/Results?command=localizeResult&userID=@abc123456&historyCounts=[3,%204]&testID=0",
                #"{"success": false, "error": "No result found"}"#
            ),
        ])
    func errors(path: String, expected: String) async throws {
        try await ServerHarness.run { server in
            let answer = try await HTTPProbe.request(port: try #require(server.ports.analyzerPlain), path: path)
            #expect(answer == expected)
        }
    }

    @Test("analyze for an unknown test is a clear error; a stored test is analysed reproducibly")
    func analyze() async throws {
        try await ServerHarness.run { server in
            let port = try #require(server.ports.analyzerPlain)
            let unknown = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results",
                body: "command=analyze&userID=nobody1234&historyCount=1&testID=1")
            #expect(
                unknown == #"{"success": false, "error": "No test found for userID nobody1234 and historyCount 1"}"#)
            try await Self.seed(
                server.store, user: "@seeded001", historyCount: 2,
                original: (0..<40).map { 5 + Double($0 % 7) * 0.1 }, control: (0..<40).map { 1 + Double($0 % 5) * 0.1 })
            let analyzed = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results?command=analyze&userID=@seeded001",
                body: "historyCount=2&testID=1")
            #expect(analyzed == #"{"success": true}"#)
            let first = try await HTTPProbe.request(
                port: port, path: "/Results?command=singleResult&userID=@seeded001&historyCount=2&testID=1")
            let result = try SingleResult.parse(Array(first.utf8)).get()
            #expect(result.areaTest < -0.7)
            #expect(result.ksPValue < 0.01)
            #expect(result.date == "2023-11-14 22:13:20")
            let stored = try #require(try await server.store.test(TestKey(userID: "@seeded001", historyCount: 2)))
            #expect(stored.mainAnalysis?.summary.verdict == .differentiation)
            let again = try await HTTPProbe.request(
                port: port, path: "/Results?command=singleResult&userID=@seeded001&historyCount=2&testID=1")
            #expect(again == first)
        }
    }

    /// Published clients get area ±1 and p 1 (their "inconclusive"), ours the reason in `insufficient_data`.
    @Test("too few measurements: stored inconclusive with the reason; the answer cannot read as 'no differentiation'")
    func tooFewMeasurements() async throws {
        try await ServerHarness.run { server in
            let port = try #require(server.ports.analyzerPlain)
            // An empty pair (port853s on loopback: no whole sample) and a pair of 3 samples each.
            try await Self.seed(server.store, user: "@fewdata01", historyCount: 1, original: [], control: [])
            try await Self.seed(
                server.store, user: "@fewdata01", historyCount: 2, original: [1, 1.1, 1.2], control: [9, 9.1, 9.2])
            for historyCount in [1, 2] {
                let queued = try await HTTPProbe.request(
                    port: port, method: "POST", path: "/Results",
                    body: "command=analyze&userID=@fewdata01&historyCount=\(historyCount)&testID=1")
                #expect(queued == #"{"success": true}"#)
                let body = try await HTTPProbe.request(
                    port: port,
                    path: "/Results?command=singleResult&userID=@fewdata01&historyCount=\(historyCount)&testID=1")
                let result = try SingleResult.parse(Array(body.utf8)).get()
                #expect(result.ksPValue == 1, "\(body)")
                #expect(abs(result.areaTest) == 1, "\(body)")
                let reason = try #require(result.insufficientData, "\(body)")
                #expect(reason.hasPrefix("too few measurements"))
                // Every published rule (area ≥ 0.3 or 0.5, KS p < 0.01) reads these numbers as "inconclusive".
                let stored = try #require(
                    try await server.store.test(TestKey(userID: "@fewdata01", historyCount: historyCount)))
                let summary = try #require(stored.mainAnalysis?.summary)
                #expect(summary.verdict == .inconclusive)
                #expect(summary.insufficientDataReason == reason)
            }
            // The stored numbers stay the true ones: 3 samples each, completely separated.
            let few = try #require(try await server.store.test(TestKey(userID: "@fewdata01", historyCount: 2)))
            #expect(few.mainAnalysis?.summary.ksPValue ?? 1 < 0.2)
            #expect(few.mainAnalysis?.summary.areaTest ?? 0 > 0.8)
        }
    }

    @Test("WeHeY: getServers returns the configured pair; localize then localizeResult answer from stored samples")
    func localization() async throws {
        let withPair: (inout ReplayServerConfiguration) -> Void = {
            $0.localizationServerPairs = [
                LocalizationPair(prefix: nil, first: "10.0.0.1", second: "10.0.0.2", label: "AS1 or AS2")
            ]
        }
        try await ServerHarness.run(configure: withPair) { server in
            let port = try #require(server.ports.analyzerPlain)
            let servers = try await HTTPProbe.request(port: port, path: "/Results?command=getServers")
            #expect(
                servers
                    == #"{"success": true, "response": {"server-site-pairs": [], "server-ip-pairs": [["10.0.0.1", "10.0.0.2", "AS1 or AS2"]]}}"#
            )
            let single = (0..<80).map { 4 + Double($0 % 9) * 0.05 }
            let half = (0..<80).map { 2 + Double($0 % 7) * 0.03 }
            try await Self.seed(server.store, user: "@wehey0001", historyCount: 5, original: single, control: single)
            try await Self.seed(server.store, user: "@wehey0001", historyCount: 6, original: half, control: half)
            try await Self.seed(server.store, user: "@wehey0001", historyCount: 7, original: half, control: half)
            let info1 = FormParameters.encodeComponent(
                #"{"server":"10.0.0.1","historyCount":"6","replayPort":"443","replayName":"TinyWeb-11212026"}"#)
            let info2 = FormParameters.encodeComponent(
                #"{"server":"10.0.0.2","historyCount":"7","replayPort":"443","replayName":"TinyWeb-11212026"}"#)
            let singleInfo = FormParameters.encodeComponent(
                #"{"singleReplay_userID":"@wehey0001","singleReplay_server":"10.0.0.1","singleReplay_historyCount":"5"}"#
            )
            let queued = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results",
                body: "command=localize&userID=%40wehey0001&testID=0&server1Info=\(info1)&server2Info=\(info2)"
                    + "&singleServerInfo=\(singleInfo)&kwargs=%7B%7D")
            #expect(queued == #"{"success": true}"#)
            let answer = try await HTTPProbe.request(
                port: port, path: "/Results?command=localizeResult&userID=@wehey0001&historyCounts=[6,%207]&testID=0")
            let json = try JSONValue.parse(Array(answer.utf8))
            #expect(json["success"] == .bool(true))
            let response = try #require(json["response"])
            #expect(response["userID"] == .string("@wehey0001"))
            #expect(response["localization_tests"] == .array([.string("pairsum_vs_single_xput")]))
            guard case .number(let pValue, _)? = response["pairsum_vs_single_xput"]?["mwuPVal"] else {
                Issue.record("no mwuPVal in \(answer)")
                return
            }
            #expect(pValue >= 0 && pValue <= 1)
        }
    }

    @Test("WeHeY: localize fetches the second server's samples from that server's analyzer")
    func localizationAcrossServers() async throws {
        let single = (0..<80).map { 4 + Double($0 % 9) * 0.05 }
        let half = (0..<80).map { 2 + Double($0 % 7) * 0.03 }
        let fleet = try FleetAuthenticator(secret: Array("a fleet secret of at least 32 bytes".utf8))
        // Signed peer requests go only over HTTPS, to a peer whose certificate names it.
        let files = try CertificateFactory.issue(
            into: TestResources.temporaryDirectory("wehe-analyzer-peer"), hostNames: ["127.0.0.1"])
        let withFleet: (inout ReplayServerConfiguration) -> Void = { configuration in
            configuration.fleetAuthenticator = fleet
            configuration.tls = .init(certificateChainPath: files.serverCertificate, privateKeyPath: files.serverKey)
            configuration.analyzerTLSPort = 0
        }
        try await ServerHarness.run(configure: withFleet) { peer in
            try await Self.seed(peer.store, user: "@wehey0002", historyCount: 7, original: half, control: half)
            let peerPort = try #require(peer.ports.analyzerTLS)
            let pairedWithPeer: (inout ReplayServerConfiguration) -> Void = { configuration in
                configuration.localizationServerPairs = [
                    LocalizationPair(prefix: nil, first: "127.0.0.1", second: "127.0.0.1", label: "test pair")
                ]
                configuration.peerAnalyzerPort = peerPort
                configuration.peerCACertificatePath = files.caCertificate
                configuration.fleetAuthenticator = fleet
            }
            try await ServerHarness.run(configure: pairedWithPeer) { server in
                try await Self.seed(
                    server.store, user: "@wehey0002", historyCount: 5, original: single, control: single)
                try await Self.seed(server.store, user: "@wehey0002", historyCount: 6, original: half, control: half)
                let port = try #require(server.ports.analyzerPlain)
                let info1 = FormParameters.encodeComponent(#"{"server":"127.0.0.1","historyCount":"6"}"#)
                let info2 = FormParameters.encodeComponent(#"{"server":"127.0.0.1","historyCount":"7"}"#)
                let singleInfo = FormParameters.encodeComponent(
                    #"{"singleReplay_userID":"@wehey0002","singleReplay_historyCount":"5"}"#)
                let queued = try await HTTPProbe.request(
                    port: port, method: "POST", path: "/Results",
                    body: "command=localize&userID=%40wehey0002&testID=0&server1Info=\(info1)&server2Info=\(info2)"
                        + "&singleServerInfo=\(singleInfo)&kwargs=%7B%7D")
                #expect(queued == #"{"success": true}"#)
                let run = try #require(
                    try await server.store.localization(userID: "@wehey0002", historyCounts: [6, 7]))
                #expect(run.summary?.mwuPValue != nil)
                #expect(run.summary?.simultaneousMeansMbps.count == 2)
            }
        }
    }
}
