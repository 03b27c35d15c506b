import Crypto
import Foundation
import Testing
import WeheCore
import WeheRecord
import WeheTestKit
import WeheWire

@Suite("wehe record: captures the tests write become traces, field by field")
struct RecorderTests {
    static let phone = SyntheticCapture.Endpoint("192.168.1.23", 50000)
    static let web = SyntheticCapture.Endpoint("93.184.216.34", 80)

    static let request1 = Fixture.bytes(
        "GET /video.mp4?user=alice&sig=42 HTTP/1.1\r\nHost: media.example.com\r\nCookie: id=s3cr3t\r\n\r\n")
    static let request2 = Fixture.bytes("GET /next HTTP/1.1\r\nHost: media.example.com\r\n\r\n")
    static let header1 = Fixture.bytes("HTTP/1.1 200 OK\r\nSet-Cookie: a=b\r\nContent-Length: 3000\r\n\r\n")

    /// An HTTP session: a request in two segments captured out of order, a response in three segments with the
    /// second retransmitted, and after 1.5 s a second request and response.
    static func httpCapture(link: SyntheticCapture.Link) -> SyntheticCapture {
        var capture = SyntheticCapture(link: link)
        var connection = SyntheticTCPConnection(client: phone, server: web)
        let t = Fixture.start
        connection.handshake(at: t, into: &capture)
        // The request's second half is captured before its first half.
        let first = Array(request1[..<20])
        let second = Array(request1[20...])
        let firstSequence = connection.clientSequence
        capture.tcp(
            at: t + 0.010, from: phone, to: web, sequence: firstSequence &+ 20,
            acknowledgement: connection.serverSequence, payload: second)
        capture.tcp(
            at: t + 0.011, from: phone, to: web, sequence: firstSequence, acknowledgement: connection.serverSequence,
            payload: first)
        connection.clientSequence &+= UInt32(request1.count)
        let response = header1 + Fixture.body(3000)
        connection.serverSends(Array(response[..<1000]), at: t + 0.050, into: &capture)
        let retransmitted = connection.serverSends(Array(response[1000..<2000]), at: t + 0.060, into: &capture)
        connection.serverSends(Array(response[2000...]), at: t + 0.070, into: &capture)
        capture.tcp(
            at: t + 0.080, from: web, to: phone, sequence: retransmitted, acknowledgement: connection.clientSequence,
            payload: Array(response[1000..<2000]))
        connection.clientSends(request2, at: t + 1.5, into: &capture)
        connection.serverSends(Fixture.body(2000, seed: 3), at: t + 1.6, into: &capture)
        return capture
    }

    @Test("HTTP over IPv4 (Ethernet pcap): reassembly, redaction, client trace, server trace, control")
    func httpTrace() throws {
        var options = RecordingOptions(client: "192.168.1.23", id: "web")
        options.displayName = "Web video"
        let recording = try Fixture.record(Self.httpCapture(link: .ethernet), options: options)
        let trace = recording.client
        #expect(trace.name == "web-11142023")
        #expect(trace.tcpCSPairs == ["010.000.000.001.50000-093.184.216.034.00080"])
        #expect(trace.udpClientPorts.isEmpty)
        // The request as the recorder sent it, with the query values and the cookie replaced (lengths kept).
        let redacted = Fixture.bytes(
            "GET /video.mp4?user=xxxxx&sig=xx HTTP/1.1\r\nHost: media.example.com\r\nCookie: xxxxxxxxx\r\n\r\n")
        #expect(trace.packets.count == 3)
        #expect(trace.packets[0].payload == Array(redacted[..<20]))
        #expect(trace.packets[1].payload == Array(redacted[20...]))
        #expect(trace.packets[2].payload == Self.request2)
        #expect(trace.packets.allSatisfy { $0.csPair.rawValue == trace.tcpCSPairs[0] })
        // Times count from the first kept payload; the reordered first half keeps the later time of the pair.
        #expect(trace.packets[0].timestamp == 0)
        #expect(trace.packets[1].timestamp == 0)
        #expect(abs(trace.packets[2].timestamp - 1.489) < 1e-6)
        let response1 =
            Fixture.bytes("HTTP/1.1 200 OK\r\nSet-Cookie: xxx\r\nContent-Length: 3000\r\n\r\n")
            + Fixture.body(3000)
        let response2 = Fixture.body(2000, seed: 3)
        #expect(trace.packets[0].kind == .tcp(responseLength: 0, responseHash: nil))
        #expect(trace.packets[1].kind == .tcp(responseLength: response1.count, responseHash: Self.sha1(response1)))
        #expect(trace.packets[2].kind == .tcp(responseLength: 2000, responseHash: Self.sha1(response2)))
        #expect(trace.problems().isEmpty)
        // The server side: two groups with the recorded segments and their pacing, the retransmission gone.
        let flow = try #require(recording.server.tcpFlows.first)
        #expect(recording.server.tcpFlows.count == 1)
        #expect(flow.groups.count == 2)
        #expect(flow.groups[0].requestLength == redacted.count)
        #expect(flow.groups[0].responseLength == response1.count)
        let segments = try #require(flow.groups[0].segments)
        #expect(segments.map(\.payload.count) == [1000, 1000, response1.count - 2000])
        #expect(segments.flatMap(\.payload) == response1)
        #expect(zip(segments.map(\.offset), [0, 0.010, 0.020]).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(flow.groups[1].requestLength == Self.request2.count)
        #expect(flow.groups[1].segments?.flatMap(\.payload) == response2)
        // The report.
        let report = recording.report
        #expect(report.flows.count == 1)
        #expect(report.flows[0].host == "media.example.com")
        #expect(report.flows[0].notes.contains("1 server retransmissions dropped"))
        #expect(report.flows[0].notes.contains("1 out-of-order client segments put back in place"))
        #expect(Set(report.redactions.map(\.kind)) == ["Cookie", "Set-Cookie", "query"])
        #expect(report.redactions.first { $0.kind == "query" }?.bytes == 7)
        #expect(report.clientRewrittenTo == "10.0.0.1")
        #expect(report.text.contains("your address 192.168.1.23 is rewritten to 10.0.0.1"))
        #expect(!report.text.contains("s3cr3t") && !report.json.serialized().contains("alice"))
        // The control: the project's control generation, its responses inverted the same way.
        #expect(recording.control.name == "webRandom-11142023")
        #expect(recording.control == ControlTraceGenerator().control(of: trace).withHashes(of: recording.control))
        let controlSegments = try #require(recording.controlServer.tcpFlows.first?.groups[0].segments)
        #expect(controlSegments.map(\.payload) == segments.map { ControlTraceGenerator().invert($0.payload) })
        #expect(recording.entry.id == "web" && recording.entry.name == "Web video")
        #expect(recording.entry.durationSeconds == 2)
    }

    @Test("written files load back unchanged through the library wehe run and wehe-server read")
    func writtenFilesLoad() throws {
        let recording = try Fixture.record(
            Self.httpCapture(link: .linuxSLL), options: RecordingOptions(client: "192.168.1.23", id: "web"))
        let directory = TestResources.temporaryDirectory("wehe-record-out")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // An existing catalog keeps its entries; the recorded test is added.
        try Data(
            #"{"apps": [{"name": "Other", "size": 1, "time": 1, "image": "other", "datafile": "o.json", "randomdatafile": "r.json", "category": "VIDEO"}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: directory + "/apps_list.json"))
        let files = try RecordingWriter(directory: directory).write(recording)
        #expect(files.count == 5)
        let library = ReplayLibrary(directory: directory)
        let catalog = try library.catalog()
        #expect(catalog.entries.map(\.id) == ["other", "web"])
        let entry = try #require(catalog.entry(named: "web"))
        #expect(entry.originalFile == "web_11142023.pcap_client_all.json")
        #expect(entry.controlFile == "webRandom_11142023.pcap_client_all.json")
        #expect(try library.trace(file: entry.originalFile) == recording.client)
        #expect(try library.trace(file: try #require(entry.controlFile)) == recording.control)
        #expect(try library.serverTrace(for: entry.originalFile, client: recording.client) == recording.server)
        // Recording again replaces the entry instead of adding a second one.
        try RecordingWriter(directory: directory).write(recording)
        #expect(try library.catalog().entries.map(\.id) == ["other", "web"])
    }

    @Test("the writer creates missing parent folders (the default recordings folder), and the test joins a catalog")
    func writtenIntoRecordings() throws {
        let recording = try Fixture.record(
            Self.httpCapture(link: .linuxSLL), options: RecordingOptions(client: "192.168.1.23", id: "web"))
        let home = TestResources.temporaryDirectory("wehe-record-home")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let recordings = home + "/.local/share/wehe/recordings"
        try RecordingWriter(directory: recordings).write(recording)
        // Another folder's catalog, as the installed traces are, with the recordings joined to it.
        let installed = home + "/installed"
        try FileManager.default.createDirectory(atPath: installed, withIntermediateDirectories: true)
        try Data(
            #"{"apps": [{"name": "Other", "size": 1, "time": 1, "image": "other", "datafile": "o.json", "randomdatafile": "r.json", "category": "VIDEO"}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: installed + "/apps_list.json"))
        let library = ReplayLibrary(directory: installed, additionalDirectories: [recordings, home + "/missing"])
        #expect(library.additionalDirectories == [recordings])
        let catalog = try library.catalog()
        #expect(catalog.entries.map(\.id) == ["other", "web"])
        #expect(catalog.entries.map(\.recorded) == [false, true])
        let entry = try #require(catalog.entry(named: "web"))
        #expect(library.path(of: entry.originalFile) == recordings + "/" + entry.originalFile)
        #expect(try library.trace(file: entry.originalFile) == recording.client)
        #expect(try library.serverTrace(for: entry.originalFile, client: recording.client) == recording.server)
        #expect(try library.clientTraceFiles().contains(entry.originalFile))
    }

    @Test("TLS over IPv6 (Linux cooked v2, pcapng): the server name, record sizes, and --server-name")
    func tlsTrace() throws {
        let phone = SyntheticCapture.Endpoint("2001:db8::23", 50001)
        let video = SyntheticCapture.Endpoint("2001:db8::443", 443)
        let ads = SyntheticCapture.Endpoint("2001:db8::99", 443)
        var capture = SyntheticCapture(link: .linuxSLL2)
        let t = Fixture.start
        var main = SyntheticTCPConnection(client: phone, server: video)
        var other = SyntheticTCPConnection(client: SyntheticCapture.Endpoint("2001:db8::23", 50002), server: ads)
        main.handshake(at: t, into: &capture)
        other.handshake(at: t + 0.001, into: &capture)
        let hello = Fixture.clientHello(serverName: "video.example.net")
        main.clientSends(hello, at: t + 0.01, into: &capture)
        other.clientSends(Fixture.clientHello(serverName: "ads.example.com"), at: t + 0.011, into: &capture)
        let serverHello = Fixture.tlsRecord(type: 0x16, length: 60, fill: 1)
        let data = Fixture.tlsRecord(type: 0x17, length: 4000, fill: 2)
        // The server's two records, the second captured before the first.
        let helloSequence = main.serverSequence
        main.serverSequence &+= UInt32(serverHello.count)
        main.serverSends(data, at: t + 0.05, into: &capture)
        capture.tcp(
            at: t + 0.051, from: video, to: phone, sequence: helloSequence, acknowledgement: main.clientSequence,
            payload: serverHello)
        other.serverSends(Fixture.tlsRecord(type: 0x16, length: 90, fill: 3), at: t + 0.06, into: &capture)
        var options = RecordingOptions(client: "2001:db8::23", id: "video")
        options.serverNames = ["example.net"]
        let recording = try Fixture.record(capture, format: .pcapng, options: options)
        #expect(recording.client.tcpCSPairs == ["fd00::1.50001-2001:db8::443.00443"])
        #expect(recording.client.packets.map(\.payload) == [hello])
        #expect(recording.client.packets[0].responseLength == serverHello.count + data.count)
        #expect(recording.server.tcpFlows[0].groups[0].segments?.flatMap(\.payload) == serverHello + data)
        let flows = recording.report.flows
        #expect(flows.map(\.serverName) == ["video.example.net", "ads.example.com"])
        #expect(flows.map(\.kept) == [true, false])
        #expect(flows[1].dropReason == "server name ads.example.com does not match --server-name")
        #expect(flows[0].tlsRecordsUp == [hello.count - 5])
        #expect(flows[0].tlsRecordsDown == [60, 4000])
        #expect(flows[0].server == "[2001:db8::443]:443")
        #expect(flows[0].firstBytesHex.hasPrefix("160301"))
        #expect(recording.report.clientRewrittenTo == "fd00::1")
        #expect(recording.report.text.contains("TLS server name video.example.net"))
        // The control breaks the TLS framing and the name.
        #expect(recording.control.packets[0].payload == hello.map { $0 ^ 0xFF })
        // The same session chosen by flow number and by port gives the same test.
        var byFlow = RecordingOptions(client: "2001:db8::23", id: "video")
        byFlow.flowNumbers = [1]
        #expect(try Fixture.record(capture, format: .pcapng, options: byFlow).client == recording.client)
        var byPort = RecordingOptions(client: "2001:db8::23", id: "video")
        byPort.ports = [443]
        let both = try Fixture.record(capture, format: .pcapng, options: byPort)
        // Two TCP flows to port 443: one connection per test, the one with more bytes.
        #expect(both.client == recording.client)
        #expect(both.report.flows[1].dropReason?.hasPrefix("a TCP test replays one connection") == true)
    }

    static let caller = SyntheticCapture.Endpoint("10.1.2.3", 40000)
    static let relay = SyntheticCapture.Endpoint("198.51.100.7", 3478)

    /// A UDP call: three datagrams up and two down, 25 s of silence, one more each way.
    static func udpCapture() -> SyntheticCapture {
        var capture = SyntheticCapture(link: .linuxSLL)
        let t = Fixture.start
        for (offset, text) in [(0.0, "a1"), (0.02, "a2"), (0.04, "a3")] {
            capture.udp(at: t + offset, from: caller, to: relay, payload: Fixture.bytes(text))
        }
        capture.udp(at: t + 0.01, from: relay, to: caller, payload: Fixture.bytes("b1"))
        capture.udp(at: t + 0.03, from: relay, to: caller, payload: Fixture.bytes("b2"))
        capture.udp(at: t + 25.04, from: caller, to: relay, payload: Fixture.bytes("a4"))
        capture.udp(at: t + 25.05, from: relay, to: caller, payload: [])
        return capture
    }

    @Test("UDP with a 25 s silence (Linux cooked pcap): keep-alives every 10 s, the gap reported, then shortened")
    func udpTrace() throws {
        let recording = try Fixture.record(Self.udpCapture(), options: RecordingOptions(client: "10.1.2.3", id: "call"))
        let trace = recording.client
        #expect(trace.transport == .udp)
        #expect(trace.udpClientPorts == ["40000"])
        #expect(trace.tcpCSPairs.isEmpty)
        #expect(trace.packets.map { String(decoding: $0.payload, as: UTF8.self) } == ["a1", "a2", "a3", "", "", "a4"])
        let times: [Double] = [0, 0.02, 0.04, 10.04, 20.04, 25.04]
        #expect(zip(trace.packets.map(\.timestamp), times).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(trace.packets.allSatisfy { $0.csPair.rawValue == "010.000.000.001.40000-198.051.100.007.03478" })
        let datagrams = try #require(recording.server.udpFlows.first?.datagrams)
        #expect(datagrams.map(\.payload) == [Fixture.bytes("b1"), Fixture.bytes("b2"), []])
        #expect(zip(datagrams.map(\.offset), [0, 0.02, 25.04]).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(recording.report.gaps.count == 1)
        #expect(abs(recording.report.gaps[0].start - 0.04) < 1e-6 && abs(recording.report.gaps[0].length - 25) < 1e-6)
        #expect(recording.report.gaps[0].shortenedTo == nil)
        #expect(recording.report.text.contains("idle gap at 0.04 s: 25 s"))
        // --shorten-gaps 2: the silence lasts 2 s, no keep-alive is needed, the server's schedule moves too.
        var options = RecordingOptions(client: "10.1.2.3", id: "call")
        options.shortenGaps = 2
        let short = try Fixture.record(Self.udpCapture(), options: options)
        #expect(short.client.packets.count == 4)
        #expect(abs((short.client.packets.last?.timestamp ?? 0) - 2.04) < 1e-6)
        #expect(abs((short.server.udpFlows[0].datagrams?.last?.offset ?? 0) - 2.04) < 1e-6)
        #expect(short.report.gaps.first?.shortenedTo == 2)
        #expect(short.report.warnings.contains { $0.contains("the server sends only") })
    }

    @Test("a server-first stream is dropped; of two UDP flows that start alike the second is dropped (null link)")
    func serverFirstAndAlike() throws {
        var capture = SyntheticCapture(link: .null)
        let t = Fixture.start
        let mail = SyntheticCapture.Endpoint("203.0.113.5", 25)
        var smtp = SyntheticTCPConnection(client: SyntheticCapture.Endpoint("10.1.2.3", 39000), server: mail)
        smtp.handshake(at: t, into: &capture)
        smtp.serverSends(Fixture.bytes("220 mail.example.com ESMTP\r\n"), at: t + 0.01, into: &capture)
        smtp.clientSends(Fixture.bytes("EHLO me\r\n"), at: t + 0.02, into: &capture)
        smtp.serverSends(Fixture.body(20_000), at: t + 0.03, into: &capture)
        let game = SyntheticCapture.Endpoint("198.51.100.9", 5000)
        for port: UInt16 in [41000, 41001] {
            let me = SyntheticCapture.Endpoint("10.1.2.3", port)
            capture.udp(at: t + 0.1, from: me, to: game, payload: Fixture.bytes("hello"))
            capture.udp(at: t + 0.2, from: game, to: me, payload: Fixture.body(900))
        }
        var options = RecordingOptions(client: "10.1.2.3", id: "game")
        options.transport = .udp
        let recording = try Fixture.record(capture, options: options)
        let flows = recording.report.flows
        #expect(flows.map(\.kept) == [false, true, false])
        #expect(flows[0].dropReason?.hasPrefix("the server speaks first") == true)
        #expect(flows[2].dropReason == "starts like flow #2 to the same port: the server could not tell them apart")
        #expect(recording.report.warnings.contains("flows #2 and #3 start alike; #3 dropped"))
        #expect(recording.client.udpClientPorts == ["41000"])
        // Without --transport the same test: the transport is chosen among the flows that can be replayed.
        let unforced = try Fixture.record(capture, options: RecordingOptions(client: "10.1.2.3", id: "game"))
        #expect(unforced.client == recording.client)
    }

    @Test("two TCP flows with the same first bytes: a warning; --refuse-identifying drops a flow with a cookie")
    func alikeAndRefused() throws {
        var capture = SyntheticCapture(link: .raw)
        let t = Fixture.start
        for (index, port) in [50010, 50011].enumerated() {
            var connection = SyntheticTCPConnection(
                client: SyntheticCapture.Endpoint("192.168.1.23", UInt16(port)), server: Self.web)
            connection.handshake(at: t + Double(index), into: &capture)
            connection.clientSends(Self.request1, at: t + Double(index) + 0.01, into: &capture)
            connection.serverSends(Fixture.body(1000 + index), at: t + Double(index) + 0.02, into: &capture)
        }
        let recording = try Fixture.record(capture, options: RecordingOptions(client: "192.168.1.23", id: "web"))
        #expect(recording.report.warnings.contains { $0.hasPrefix("flows #1 and #2 start with the same bytes") })
        #expect(recording.report.flows.map(\.kept) == [false, true])
        var options = RecordingOptions(client: "192.168.1.23", id: "web")
        options.refuseIdentifying = true
        #expect {
            try Fixture.record(capture, options: options)
        } throws: { error in
            guard let error = error as? WeheRecordError else { return false }
            return error.code == .unusable && error.message.contains("cleartext Cookie, query refused")
        }
    }

    /// A Mac's `tcpdump -i rvi0` (an iPhone behind `rvictl`) or `-i pktap` writes Apple's PKTAP framing. The same
    /// session framed that way (a version-2 header of 156 bytes around Ethernet), read through libpcap in both file
    /// formats, gives the recording the Ethernet capture gives. Before PKTAP was read, the recorder refused the file
    /// ("the capture's link type 258 is not one we read").
    @Test("Apple PKTAP (pcap and pcapng): the same recording as Ethernet; damaged PKTAP headers counted, not fatal")
    func pktapTrace() throws {
        let options = RecordingOptions(client: "192.168.1.23", id: "web")
        let ethernet = try Fixture.record(Self.httpCapture(link: .ethernet), options: options)
        for format in [SyntheticCapture.Format.pcap, .pcapng] {
            let pktap = try Fixture.record(Self.httpCapture(link: .pktap), format: format, options: options)
            #expect(pktap.client == ethernet.client)
            #expect(pktap.server == ethernet.server)
            #expect(pktap.report.skippedFrames.isEmpty)
        }
        // Headers shorter than version 1, longer than their frame, of another record type, or around a link type
        // that is not read: each frame is skipped as "not IP" and the rest is recorded.
        var odd = Self.httpCapture(link: .pktap)
        let packet: [UInt8] = [0x45, 0, 0, 40] + [UInt8](repeating: 0, count: 36)
        for header in [
            SyntheticCapture.pktapHeader(innerLinkType: 12, length: 60),
            Array(SyntheticCapture.pktapHeader(innerLinkType: 12, length: 100_000).prefix(156)),
            SyntheticCapture.pktapHeader(innerLinkType: 12, recordType: 0),
            SyntheticCapture.pktapHeader(innerLinkType: 105),
            SyntheticCapture.pktapHeader(innerLinkType: 258) + SyntheticCapture.pktapHeader(innerLinkType: 12),
        ] {
            odd.raw(at: Fixture.start + 2, header + packet)
        }
        odd.raw(at: Fixture.start + 2, [1, 2, 3])
        let recording = try Fixture.record(odd, options: options)
        #expect(recording.report.skippedFrames == ["not IPv4 or IPv6": 6])
        #expect(recording.client == ethernet.client)
    }

    @Test("damaged, foreign and empty inputs give a clear error, never a crash")
    func badInput() throws {
        let directory = TestResources.temporaryDirectory("wehe-record-bad")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = RecordingOptions(client: "192.168.1.23", id: "web")
        func code(_ bytes: [UInt8]) -> WeheRecordError.Code? {
            let path = directory + "/input.pcap"
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            do {
                _ = try Recorder(options: options).record(file: path)
                return nil
            } catch {
                return error.code
            }
        }
        let good = Self.httpCapture(link: .ethernet).bytes(.pcap)
        #expect(code(Array("this is not a capture at all".utf8)) == .malformed)
        #expect(code([]) == .malformed)
        #expect(code(Array(good.prefix(good.count - 100))) == .malformed)  // cut inside the last record
        #expect(code(Array(Self.httpCapture(link: .ethernet).bytes(.pcapng).prefix(300))) == .malformed)
        var wifi = Self.httpCapture(link: .ethernet).bytes(.pcap)
        wifi[20] = 105  // IEEE 802.11: not a link type we decode
        #expect(code(wifi) == .malformed)
        #expect(code(good) == nil)
        #expect(throws: WeheRecordError.self) { try Recorder(options: options).record(file: directory + "/absent") }
        var stranger = RecordingOptions(client: "192.168.1.99", id: "web")
        stranger.displayName = nil
        #expect {
            try Fixture.record(Self.httpCapture(link: .ethernet), options: stranger)
        } throws: { error in
            (error as? WeheRecordError)?.message.hasPrefix("no TCP or UDP packet to or from 192.168.1.99") == true
        }
        #expect(throws: WeheRecordError.self) {
            try Fixture.record(Self.httpCapture(link: .ethernet), options: RecordingOptions(client: "x", id: "web"))
        }
        #expect(throws: WeheRecordError.self) {
            try Fixture.record(
                Self.httpCapture(link: .ethernet), options: RecordingOptions(client: "192.168.1.23", id: "../etc"))
        }
        // Frames cut by the snap length or not IP are counted, not fatal.
        var odd = Self.httpCapture(link: .ethernet)
        odd.raw(
            at: Fixture.start + 2, [UInt8](repeating: 0, count: 12) + [0x08, 0x06] + [UInt8](repeating: 0, count: 28))
        odd.raw(at: Fixture.start + 2, [UInt8](repeating: 0, count: 12) + [0x08, 0x00, 0x45, 0, 0x05, 0xdc])
        let recording = try Fixture.record(odd, options: options)
        #expect(recording.report.skippedFrames == ["not IPv4 or IPv6": 1, "malformed or truncated header": 1])
    }

    static func sha1(_ bytes: [UInt8]) -> String {
        Insecure.SHA1.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}

extension ReplayTrace {
    /// This trace with the response hashes of `other` (the recorder hashes the control's own inverted responses).
    func withHashes(of other: ReplayTrace) -> ReplayTrace {
        var copy = self
        for index in copy.packets.indices where index < other.packets.count {
            copy.packets[index].kind = other.packets[index].kind
        }
        return copy
    }
}
