import Testing
import WeheCore

@Suite("server side derived from a client trace")
struct ServerTraceTests {
    let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "198.18.2.2", serverPort: 443)

    func packet(_ size: Int, _ time: Double, _ response: Int) -> ReplayPacket {
        ReplayPacket(
            csPair: pair,
            payload: [UInt8](repeating: 1, count: size),
            timestamp: time,
            kind: .tcp(responseLength: response, responseHash: response > 0 ? String(repeating: "a", count: 40) : nil)
        )
    }

    @Test("consecutive payloads accumulate until a packet expects a response")
    func groups() {
        let trace = ReplayTrace(
            packets: [
                packet(64, 0, 0), packet(1002, 0.1, 0), packet(1334, 0.2, 5000), packet(10, 0.3, 7), packet(20, 0.4, 0),
                packet(5, 0.5, 0),
            ],
            udpClientPorts: [],
            tcpCSPairs: [pair.rawValue],
            name: "Test-01012026"
        )
        let server = ServerTrace(derivingFrom: trace)
        #expect(server.tcpFlows.count == 1)
        let groups = server.tcpFlows[0].groups
        #expect(groups.map(\.requestLength) == [2400, 10, 25])
        #expect(groups.map(\.responseLength) == [5000, 7, 0])
        #expect(groups.map(\.requestTime) == [0.2, 0.3, 0.5])
        #expect(server.tcpFlows[0].responseBytes == 5007)
        #expect(server.udpFlows.isEmpty)
    }

    @Test("UDP flows are listed without recorded content")
    func udp() {
        let udpPair = CSPair(clientAddress: "10.0.0.1", clientPort: 14225, serverAddress: "10.0.0.2", serverPort: 63308)
        let trace = ReplayTrace(
            packets: [ReplayPacket(csPair: udpPair, payload: [1], timestamp: 0, kind: .udp(end: false))],
            udpClientPorts: ["14225"],
            tcpCSPairs: [],
            name: "Call-01012026"
        )
        let server = ServerTrace(derivingFrom: trace)
        #expect(server.tcpFlows.isEmpty)
        #expect(server.udpFlows.map(\.csPair) == [udpPair])
        #expect(server.udpFlows[0].datagrams == nil)
        #expect(trace.transport == .udp)
        #expect(trace.problems().isEmpty)
    }

    @Test("validation names entry and field of every problem")
    func problems() {
        var trace = ReplayTrace(
            packets: [packet(1, 0.5, 0), packet(1, 0.2, 10), packet(1, -1, 0)],
            udpClientPorts: [],
            tcpCSPairs: [pair.rawValue],
            name: "Bad-01012026"
        )
        trace.packets[1].kind = .tcp(responseLength: 10, responseHash: nil)
        let problems = trace.problems()
        #expect(problems.contains { $0.entry == 1 && $0.field == "timestamp" })
        #expect(problems.contains { $0.entry == 1 && $0.field == "response_hash" })
        #expect(problems.contains { $0.entry == 2 && $0.field == "timestamp" })
        #expect(ReplayTrace(packets: [], udpClientPorts: [], tcpCSPairs: [], name: "").problems().count == 2)
    }
}
