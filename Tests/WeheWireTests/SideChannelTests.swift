import Testing
import WeheCore
import WeheWire

@Suite("side-channel messages")
struct SideChannelTests {
    @Test("framing: ten-digit prefix, split and merged deliveries")
    func framing() throws {
        #expect(SideChannelFramer.frame("NoIperf") == Array("0000000007NoIperf".utf8))
        #expect(SideChannelFramer.frame("é") == Array("0000000002é".utf8))  // UTF-8 bytes, not characters
        var framer = SideChannelFramer()
        let stream = SideChannelFramer.frame("OK") + SideChannelFramer.frame("") + SideChannelFramer.frame("Result;No")
        for byte in stream.prefix(7) { framer.append([byte]) }
        #expect(try framer.nextFrame() == nil)
        framer.append(stream.dropFirst(7))
        #expect(try framer.nextFrame() == Array("OK".utf8))
        #expect(try framer.nextFrame() == [])
        #expect(try framer.nextFrame() == Array("Result;No".utf8))
        #expect(try framer.nextFrame() == nil)
        #expect(framer.bufferedByteCount == 0)
    }

    @Test("a huge length prefix or garbage is refused before any allocation")
    func hostilePrefix() {
        var huge = SideChannelFramer()
        huge.append(Array("9999999999".utf8))
        #expect(throws: WeheWireError(.tooLarge, "")) { try huge.nextFrame() }
        var garbage = SideChannelFramer()
        garbage.append(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(throws: WeheWireError(.invalidValue, "")) { try garbage.nextFrame() }
    }

    @Test("ID declaration: the captured Java message, six-field form, and bad fields")
    func declaration() throws {
        let captured = try IDDeclaration(
            parsing: Array("@41cuu2hfa;1;PandoraRandom-05132024;0;1;False;127.0.0.1;3.3".utf8))
        #expect(captured.userID == "@41cuu2hfa")
        #expect(captured.testID == 1)
        #expect(captured.replayName == "PandoraRandom-05132024")
        #expect(captured.historyCount == 1)
        #expect(!captured.endOfTest)
        #expect(captured.clientVersion == "3.3")
        #expect(captured.body == "@41cuu2hfa;1;PandoraRandom-05132024;0;1;False;127.0.0.1;3.3")
        #expect(Array(SideChannelFramer.frame(captured.body).prefix(10)) == Array("0000000059".utf8))
        let short = try IDDeclaration(parsing: Array("abcdefghij;0;Skype-06172024;;3;true".utf8))
        #expect(short.extraString == "extraString")
        #expect(short.endOfTest)
        #expect(short.realIP == "127.0.0.1")
        #expect(short.clientVersion == nil)
        for bad in [
            "a;b;c", "a/b;0;X;0;1;True;1.1.1.1;3.3", "id;x;X;0;1;True;1.1.1.1;3.3", "id;0;X;0;-1;True;1.1.1.1;3.3",
            "id;0;;0;1;True;1.1.1.1;3.3",
        ] {
            #expect(throws: WeheWireError(.invalidValue, "")) { try IDDeclaration(parsing: Array(bad.utf8)) }
        }
    }

    @Test("permission replies round-trip; unknown codes are errors")
    func permission() throws {
        for reply in [
            PermissionReply.granted(clientIP: "127.0.0.1", sampleCount: 100), .denied(.unknownReplay, sampleCount: nil),
            .denied(.addressBusy, sampleCount: 100), .denied(.lowResources, sampleCount: nil),
        ] {
            #expect(try PermissionReply(parsing: Array(reply.body.utf8)) == reply)
        }
        #expect(PermissionReply.granted(clientIP: "127.0.0.1", sampleCount: 100).body == "1;127.0.0.1;100")
        #expect(PermissionReply.denied(.addressBusy, sampleCount: 100).body == "0;2;100")
        #expect(throws: WeheWireError(.invalidValue, "")) { try PermissionReply(parsing: Array("0;9".utf8)) }
        #expect(throws: WeheWireError(.invalidValue, "")) { try PermissionReply(parsing: Array("1;1.2.3.4".utf8)) }
    }

    @Test("a slice: its change spec round-trips, other specs ask for none, and its grant has a fourth field")
    func slice() throws {
        let slice = try #require(UDPSlice(openingSeconds: 0.25, from: 7.5, seconds: 1))
        #expect(slice.changeSpec == "[-1, \"Slice\", [0.25, 7.5, 1.0]]")
        #expect(try UDPSlice(changeSpec: Array(slice.changeSpec.utf8)) == slice)
        for other in [SideChannelMessage.noChange, "[2, \"ReplaceI\", [0, 4]]", "[-1, \"Slices\", [0, 1, 1]]", "{"] {
            #expect(try UDPSlice(changeSpec: Array(other.utf8)) == nil, "\(other)")
        }
        for bad in [
            "[-1, \"Slice\", null]", "[-1, \"Slice\", [0, 1]]", "[-1, \"Slice\", [2, 1, 1]]",
            "[-1, \"Slice\", [0, 1, 0]]", "[-1, \"Slice\", [0, 1, 1e9]]", "[-1, \"Slice\", [-1, 1, 1]]",
        ] {
            #expect(throws: WeheWireError.self, "\(bad)") { try UDPSlice(changeSpec: Array(bad.utf8)) }
        }
        let grant = PermissionReply.granted(clientIP: "127.0.0.1", sampleCount: 100, servesSlice: true)
        #expect(grant.body == "1;127.0.0.1;100;slice")
        #expect(try PermissionReply(parsing: Array(grant.body.utf8)) == grant)
        for bad in ["1;127.0.0.1;100;other", "1;127.0.0.1;100;slice;x"] {
            #expect(throws: WeheWireError.self, "\(bad)") { try PermissionReply(parsing: Array(bad.utf8)) }
        }
    }

    @Test("port map: lookup by padded port, spurious entries ignored, deterministic body")
    func portMap() throws {
        let text =
            #"{"tcp": {"": {"00000": ["", 443]}, "018.160.041.126": {"00443": ["", 10443]}, "2606:4700::6811:164b": {"00080": ["", 80]}}, "udp": {"010.110.049.082": {"63308": ["", 63308]}}}"#
        let map = try PortMap(parsing: Array(text.utf8))
        #expect(map.endpoint(udp: false, serverAddress: "018.160.041.126", serverPort: 443) == .init(port: 10443))
        #expect(map.endpoint(udp: false, serverAddress: "2606:4700::6811:164b", serverPort: 80)?.port == 80)
        #expect(map.endpoint(udp: true, serverAddress: "010.110.049.082", serverPort: 63308)?.port == 63308)
        #expect(map.endpoint(udp: false, serverAddress: "018.160.041.126", serverPort: 80) == nil)
        #expect(try PortMap(parsing: Array(map.body.utf8)) == map)
        #expect(throws: WeheWireError(.unexpectedStructure, "")) { try PortMap(parsing: Array(#"{"tcp": {}}"#.utf8)) }
    }

    @Test("throughput upload: Java notation, round trip, shape errors")
    func throughput() throws {
        let parsed = try ThroughputUpload.parse(Array("[[0,2.20944E-4,12.5],[0.12,0.24,0.36]]".utf8))
        #expect(parsed.mbps == [0, 2.20944e-4, 12.5])
        #expect(parsed.times == [0.12, 0.24, 0.36])
        let series = ThroughputSeries(mbps: [1, 2.5, 0], interval: 0.5)
        #expect(ThroughputUpload.body(series) == "[[1,2.5,0],[0.5,1,1.5]]")
        #expect(try ThroughputUpload.parse(Array(ThroughputUpload.body(series).utf8)) == series)
        for bad in ["[[1],[1,2]]", "[[1,2]]", "[[-1],[1]]", "[[\"a\"],[1]]", "{}", "[[1],[1]"] {
            #expect(throws: WeheWireError.self) { try ThroughputUpload.parse(Array(bad.utf8)) }
        }
    }

    @Test("DONE and STARTED notifications are told apart from the client's DONE;<seconds>")
    func notifications() {
        #expect(SideChannelMessage.Notification(parsing: Array("STARTED;57307".utf8)) == .started(clientPort: 57307))
        #expect(SideChannelMessage.Notification(parsing: Array("DONE;00080".utf8)) == .done(clientPort: 80))
        #expect(SideChannelMessage.Notification.done(clientPort: 80).body == "DONE;00080")
        #expect(SideChannelMessage.Notification(parsing: Array("OK".utf8)) == nil)
        #expect(SideChannelMessage.parseClientDone(Array("DONE;2.20944E-4".utf8)) == 2.20944e-4)
        #expect(SideChannelMessage.parseClientDone(Array("DONE;1.001793898".utf8)) == 1.001793898)
        #expect(SideChannelMessage.parseClientDone(Array("DONE;abc".utf8)) == nil)
    }

    @Test("mobile stats are read defensively")
    func mobileStats() throws {
        let stats = try MobileStats(
            parsing: Array(
                #"{"carrierName": "Free", "networkType": "nil", "locationInfo": {"latitude": "48.8", "longitude": 2.3}}"#
                    .utf8)
        )
        #expect(stats.carrierName == "Free")
        #expect(stats.networkType == nil)
        #expect(stats.latitude == "48.8")
        #expect(stats.longitude == "2.3")
        #expect(try MobileStats(parsing: Array("{}".utf8)) == MobileStats())
    }
}

@Suite("analyzer API messages")
struct AnalyzerMessageTests {
    @Test("form parameters: the Java body with a raw '@', percent escapes and '+'")
    func form() {
        let parameters = FormParameters.parse("testID=1&historyCount=1&userID=%40awkieqk75&command=analyze")
        #expect(parameters == ["testID": "1", "historyCount": "1", "userID": "@awkieqk75", "command": "analyze"])
        #expect(FormParameters.parse("userID=@abc&x=a+b%2&y")["userID"] == "@abc")
        #expect(FormParameters.parse("x=a+b%2")["x"] == "a b%2")
        #expect(FormParameters.parse("y")["y"] == "")
        #expect(FormParameters.encode([("userID", "@a b"), ("n", "1")]) == "userID=%40a%20b&n=1")
    }

    @Test("singleResult: every value is a string; the client parses strings or numbers")
    func singleResult() throws {
        let result = SingleResult(
            replayName: "YoutubeRandom-02202024", date: "2026-11-21 10:00:00", userID: "@abc", extraString: "0",
            historyCount: 3, testID: 1, areaTest: 0.39141592308772716, ks2RatioTest: 1,
            originalMeanMbps: 11.689857142857143,
            controlMeanMbps: 19.20828622754491, ksStatistic: 0.5, ksPValue: 8.738592427329409e-13
        )
        let body = result.responseBody
        #expect(body.contains(#""ks2pVal": "8.738592427329409e-13""#))
        #expect(body.contains(#""historyCount": "3""#))
        #expect(body.contains(#""ks2_ratio_test": "1.0""#))
        #expect(try SingleResult.parse(Array(body.utf8)) == .success(result))
        let numeric =
            #"{"success": true, "response": {"replayName": "x", "userID": "u", "historyCount": 2, "testID": 1, "area_test": 0.1, "ks2_ratio_test": 1, "xput_avg_original": 3, "xput_avg_test": 4, "ks2dVal": 0.2, "ks2pVal": 0.3}}"#
        #expect(try SingleResult.parse(Array(numeric.utf8)).get().historyCount == 2)
        let notReady = try SingleResult.parse(Array(#"{"success": false, "error": "No result found"}"#.utf8))
        #expect(notReady == .failure(AnalyzerFailure(message: "No result found")))
        if case .failure(let failure) = notReady { #expect(failure.isNotReady) }
        let missing = try SingleResult.parse(Array(#"{"success": false, "missing": "'userID'"}"#.utf8))
        #expect(missing == .failure(AnalyzerFailure(message: "missing: \"'userID'\"")))
        #expect(throws: WeheWireError.self) { try SingleResult.parse(Array("<html>".utf8)) }
    }
}
