import Testing
import WeheCore

@Suite("UDP slices of a replay")
struct UDPSliceTests {
    static let pair = CSPair(clientAddress: "10.0.0.1", clientPort: 40000, serverAddress: "10.0.0.2", serverPort: 3478)

    static func call(_ datagrams: [(time: Double, bytes: Int)], start: Double = 0) -> ReplayTrace {
        ReplayTrace(
            packets: datagrams.map {
                ReplayPacket(
                    csPair: pair, payload: Array(repeating: UInt8($0.bytes % 251), count: $0.bytes),
                    timestamp: start + $0.time, kind: .udp(end: false))
            }, udpClientPorts: ["40000"], tcpCSPairs: [], name: "call")
    }

    @Test("the opening keeps its times, the stretch moves up to follow it, everything else is left out")
    func placement() throws {
        let slice = try #require(UDPSlice(openingSeconds: 0.25, from: 5, seconds: 1))
        #expect(slice.length == 1.25)
        #expect(slice.place(0) == 0)
        #expect(slice.place(0.2) == 0.2)
        #expect(slice.place(0.25) == nil)
        #expect(slice.place(4.99) == nil)
        #expect(slice.place(5) == 0.25)
        #expect(slice.place(5.5) == 0.75)
        #expect(slice.place(6) == nil)
        #expect(UDPSlice(openingSeconds: 1, from: 0.5, seconds: 1) == nil)
        #expect(UDPSlice(openingSeconds: 0, from: 1, seconds: 0) == nil)
        #expect(UDPSlice(openingSeconds: 0, from: .nan, seconds: 1) == nil)
        #expect(UDPSlice(openingSeconds: 0, from: 1, seconds: .infinity) == nil)
    }

    @Test("a trace and a server schedule sliced alike: times from the first datagram, whatever the trace's origin")
    func traceAndSchedule() throws {
        let slice = try #require(UDPSlice(openingSeconds: 0.25, from: 2, seconds: 1))
        // One datagram at the start, one at 1 s, four from 2 s to 2.9 s, one at 3 s.
        let times: [Double] = [0, 1, 2, 2.3, 2.6, 2.9, 3]
        let trace = Self.call(times.map { ($0, 100) }, start: 40)
        let sliced = trace.slice(slice)
        #expect(sliced.packets.map { (($0.timestamp - 40) * 1000).rounded() / 1000 } == [0, 0.25, 0.55, 0.85, 1.15])
        #expect(sliced.name == trace.name && sliced.udpClientPorts == trace.udpClientPorts)
        let schedule = times.map { ServerDatagram(offset: $0, payload: [1]) }
        #expect(schedule.sliced(slice).map { ($0.offset * 1000).rounded() / 1000 } == [0, 0.25, 0.55, 0.85, 1.15])
        // A TCP trace is not sliced.
        let tcp = ReplayTrace(
            packets: [
                ReplayPacket(
                    csPair: Self.pair, payload: [1], timestamp: 0, kind: .tcp(responseLength: 0, responseHash: nil))
            ],
            udpClientPorts: [], tcpCSPairs: [Self.pair.rawValue], name: "web")
        #expect(tcp.slice(slice) == tcp)
    }
}
