import Testing
import WeheCore
import WeheServer
import WeheStore
import WeheTestKit
import WeheWire

/// The UDP loss timeline of WeHeY: the server logs what it sent on a UDP replay, the client reports the digests of
/// the datagrams that arrived (`command=udpLoss`), and the two become the replay's loss record.
@Suite("UDP loss reports (udpLoss)", .timeLimit(.minutes(6)))
struct UDPLossReportTests {
    static func body(user: String, historyCount: Int, testID: Int = 0, received: [UInt32]) -> String {
        "command=udpLoss&userID=\(FormParameters.encodeComponent(user))&historyCount=\(historyCount)&testID=\(testID)"
            + "&received=" + DatagramReceipt.encode(received)
    }

    @Test("datagrams the client did not report are lost bytes of their reading; the report is taken once")
    func report() async throws {
        let trace = try SideChannelTests.fixture("TinyCall_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.userID = "@udploss01"
            client.historyCount = 3
            let outcome = try await client.run(trace, testID: 0, server: server)
            try #require(outcome.received.count == trace.packets.count)
            let port = try #require(server.ports.analyzerPlain)
            // Every fifth datagram "lost"; the first two arrived in the other order.
            var received = outcome.received.enumerated().filter { $0.offset % 5 != 4 }.map(\.element)
            received.swapAt(0, 1)
            let body = Self.body(user: "@udploss01", historyCount: 3, received: received)

            // Only the address the stream went to may report; a refused report leaves the log for the right one.
            let stranger = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results", body: body, from: "127.0.0.5")
            #expect(stranger.contains(#""success": false"#) && stranger.contains("address"), "\(stranger)")
            let answer = try await HTTPProbe.request(port: port, method: "POST", path: "/Results", body: body)
            let lostCount = trace.packets.count / 5
            #expect(answer.contains(#""success": true"#), "\(answer)")
            #expect(answer.contains(#""lost": \#(lostCount)"#), "\(answer)")

            let record = try #require(
                try await server.store.loss(ReplayKey(userID: "@udploss01", historyCount: 3, testID: 0)))
            #expect(record.source == .clientReport)
            #expect(record.samples.count == trace.packets.count)
            let lost = record.samples.indices.filter { record.samples[$0].bytesLost > 0 }
            let expected = record.samples.indices.filter { $0 % 5 == 4 && record.samples[$0].bytesSent > 0 }
            #expect(lost == expected)
            #expect(record.samples.allSatisfy { $0.bytesLost == 0 || $0.bytesLost == $0.bytesSent })
            #expect(zip(record.samples, record.samples.dropFirst()).allSatisfy { $0.time <= $1.time })
            // The side channel's RTT stands in for the path's (UDP has no acknowledgements).
            #expect(record.minimumRTT != nil)
            #expect(record.duration > 0.5)

            // Taken once: a second report finds nothing waiting.
            let again = try await HTTPProbe.request(port: port, method: "POST", path: "/Results", body: body)
            #expect(again.contains(#""success": false"#) && again.contains("already reported"), "\(again)")
        }
    }

    @Test("reports that do not fit: unknown replay, foreign digests, malformed field, missing field")
    func refusals() async throws {
        let trace = try SideChannelTests.fixture("TinyCall_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.userID = "@udploss02"
            client.historyCount = 4
            let outcome = try await client.run(trace, testID: 0, server: server)
            let port = try #require(server.ports.analyzerPlain)
            func post(_ body: String) async throws -> String {
                try await HTTPProbe.request(port: port, method: "POST", path: "/Results", body: body)
            }
            let unknown = try await post(Self.body(user: "@udploss02", historyCount: 9, received: outcome.received))
            #expect(unknown.contains("No UDP stream"), "\(unknown)")
            let foreign = try await post(
                Self.body(user: "@udploss02", historyCount: 4, received: outcome.received.map { $0 ^ 0x5a5a_5a5a }))
            #expect(foreign.contains("does not match"), "\(foreign)")
            let malformed = try await post(
                "command=udpLoss&userID=%40udploss02&historyCount=4&testID=0&received=xyz")
            #expect(malformed.contains("value error"), "\(malformed)")
            let missing = try await post("command=udpLoss&userID=%40udploss02&historyCount=4&testID=0")
            #expect(missing.contains(#""missing": "'received'""#), "\(missing)")
            // None of these stored anything, and the log still waits for a proper report.
            #expect(try await server.store.loss(ReplayKey(userID: "@udploss02", historyCount: 4, testID: 0)) == nil)
            let proper = try await post(Self.body(user: "@udploss02", historyCount: 4, received: outcome.received))
            #expect(proper.contains(#""lost": 0"#), "\(proper)")
        }
    }

    @Test("a TCP replay leaves no UDP log: a report about it is refused")
    func tcpReplay() async throws {
        let trace = try SideChannelTests.fixture("TinyWeb_11212026.pcap_client_all.json")
        try await ServerHarness.run { server in
            var client = ScriptedClient()
            client.userID = "@udploss03"
            _ = try await client.run(trace, testID: 0, server: server)
            let port = try #require(server.ports.analyzerPlain)
            let answer = try await HTTPProbe.request(
                port: port, method: "POST", path: "/Results",
                body: Self.body(user: "@udploss03", historyCount: 1, received: [1, 2, 3]))
            #expect(answer.contains("No UDP stream"), "\(answer)")
        }
    }
}
