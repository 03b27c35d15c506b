import Testing
import WeheCore
import WeheTestKit
import WeheWire

@Suite("server trace format")
struct ServerTraceCodecTests {
    let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "2001:2:0:2::2", serverPort: 443)
    let udpPair = CSPair(clientAddress: "10.0.0.1", clientPort: 5000, serverAddress: "10.0.0.2", serverPort: 5004)

    @Test("recorded segments and datagrams round-trip")
    func roundTrip() throws {
        let trace = ServerTrace(
            name: "Rec-01012026",
            tcpFlows: [
                TCPServerFlow(
                    csPair: pair,
                    groups: [
                        ResponseGroup(
                            requestLength: 10,
                            responseLength: 5,
                            requestTime: 0.25,
                            segments: [
                                ServerSegment(offset: 0, payload: [1, 2, 3]),
                                ServerSegment(offset: 0.004, payload: [4, 5]),
                            ]
                        ),
                        ResponseGroup(requestLength: 3, responseLength: 0, requestTime: 0.5, segments: nil),
                    ]
                )
            ],
            udpFlows: [
                UDPServerFlow(
                    csPair: udpPair,
                    datagrams: [ServerDatagram(offset: 0, payload: []), ServerDatagram(offset: 0.02, payload: [9])]),
                UDPServerFlow(csPair: udpPair, datagrams: nil),
            ]
        )
        let text = ServerTraceCodec().encode(trace)
        #expect(try ServerTraceCodec().decode(Array(text.utf8)) == trace)
    }

    @Test("a trace derived from every fixture round-trips")
    func derivedFixtures() throws {
        let library = ReplayLibrary(directory: TestResources.fixtureReplays)
        for file in try library.clientTraceFiles() {
            let derived = ServerTrace(derivingFrom: try library.trace(file: file))
            let text = ServerTraceCodec().encode(derived)
            #expect(try ServerTraceCodec().decode(Array(text.utf8)) == derived, "\(file)")
        }
    }

    @Test(
        "inconsistent server traces are refused with the field",
        arguments: [
            (#"{"format": "other", "version": 1, "replayName": "x"}"#, "format"),
            (#"{"format": "wehe-server-trace", "version": 9, "replayName": "x"}"#, "version"),
            (
                #"{"format": "wehe-server-trace", "version": 1, "replayName": "x", "tcp": [{"c_s_pair": "010.000.000.001.00001-010.000.000.002.00002", "groups": [{"request_len": 1, "response_len": 4, "request_time": 0, "segments": [[0, "0102"]]}]}]}"#,
                "tcp[0].groups[0].segments"
            ),
            (
                #"{"format": "wehe-server-trace", "version": 1, "replayName": "x", "udp": [{"c_s_pair": "010.000.000.001.00001-010.000.000.002.00002", "datagrams": [[0.5, "01"], [0.1, "02"]]}]}"#,
                "udp[0].datagrams"
            ),
            (
                #"{"format": "wehe-server-trace", "version": 1, "replayName": "x", "tcp": [{"c_s_pair": "nope"}]}"#,
                "tcp[0].c_s_pair"
            ),
        ]
    )
    func invalid(text: String, field: String) {
        do {
            _ = try ServerTraceCodec().decode(Array(text.utf8))
            Issue.record("decoded without error")
        } catch {
            #expect(error.field == field, "\(error)")
        }
    }

    @Test("the library prefers a server trace file beside the client trace")
    func libraryPrefersServerFile() throws {
        let directory = TestResources.temporaryDirectory()
        let source = ReplayLibrary(directory: TestResources.fixtureReplays)
        let client = try source.trace(file: "TinySix_11212026.pcap_client_all.json")
        var recorded = ServerTrace(derivingFrom: client)
        recorded.tcpFlows[0].groups[0].segments = [
            ServerSegment(offset: 0, payload: [UInt8](repeating: 7, count: 3000))
        ]
        TestResources.write(ServerTraceCodec().encode(recorded), to: directory + "/TinySix_11212026.wehe_server.json")
        let library = ReplayLibrary(directory: directory)
        let loaded = try library.serverTrace(for: "TinySix_11212026.pcap_client_all.json", client: client)
        #expect(loaded == recorded)
        let derived = try library.serverTrace(for: "Other.pcap_client_all.json", client: client)
        #expect(derived == ServerTrace(derivingFrom: client))
    }
}
