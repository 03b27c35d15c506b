import Testing
import WeheWire

@Suite("DPI search messages (DPIanalysis, DPIrule, DPIreset)")
struct DPIMessagesTests {
    let key = DPISearchKey(userID: "@abcdefghi", carrierName: "Test Mobile", replayName: "Netflix-12122018")

    @Test("a request round-trips through its form pairs, extensions included")
    func requestRoundTrip() throws {
        let request = DPIAnalysisRequest(
            key: key, historyCount: 4, testID: 3, testedLeft: 10, testedRight: 230, diff: true, testedPacket: "C_1",
            probeBytes: 12345)
        let body = FormParameters.encode(request.formPairs)
        #expect(body.hasPrefix("command=DPIanalysis&userID=%40abcdefghi&carrierName=Test%20Mobile"))
        let parsed = try DPIAnalysisRequest(form: FormParameters.parse(body))
        #expect(parsed == request)
        let asking = DPIAnalysisRequest.currentProbe(key: key, historyCount: 4, testID: 2)
        #expect(try DPIAnalysisRequest(form: FormParameters.parse(FormParameters.encode(asking.formPairs))) == asking)
        #expect(asking.asksForCurrentProbe)
    }

    @Test(
        "malformed requests are refused naming the field",
        arguments: [
            ("testedLeft=abc&testedRight=5&diff=T", "testedLeft"),
            ("testedLeft=5&testedRight=5&diff=T", "testedLeft"),
            ("testedLeft=10&testedRight=20&diff=X", "diff"),
            ("testedLeft=10&testedRight=20", "diff"),
            ("testedLeft=-1&testedRight=-1&probeBytes=-3", "probeBytes"),
            ("testedLeft=-1&testedRight=-1&testPacket=X_1", "testPacket"),
            ("testedLeft=-1&testedRight=-1&testPacket=C_0", "testPacket"),
        ])
    func malformed(tail: String, field: String) {
        let text = "userID=u&carrierName=c&replayName=r&historyCount=1&testID=2&" + tail
        #expect {
            try DPIAnalysisRequest(form: FormParameters.parse(text))
        } throws: { error in
            (error as? WeheWireError)?.field == field
        }
    }

    @Test("a missing key field is refused")
    func missingKey() {
        #expect(throws: WeheWireError.self) {
            try DPISearchKey(form: ["userID": "u", "replayName": "r", "carrierName": " "])
        }
    }

    @Test("every response kind round-trips through its body")
    func responses() throws {
        let hex = "4e6574666c6978"
        let cases: [DPIAnalysisResponse] = [
            .probe(
                DPIProbeMessage(
                    testPacket: "S_2", testRegionLeft: 10, testRegionRight: 182, packetLength: 182, numTests: 3,
                    testedPackets: 1, bytesUsed: 9000)),
            .rules(
                DPIRulesMessage(
                    rules: [
                        DPIRuleMessage(
                            packet: "C_1", left: 100, right: 107, hex: hex, matchingBytes: Array(100..<107) + [150])
                    ], numTests: 27, bytesUsed: 1_000_000)),
            .noRule(
                DPINoRuleMessage(
                    reason: .noDPIInFirstPackets, message: "NO DPI for first 10 pacs", numTests: 10, bytesUsed: 0)),
        ]
        for response in cases {
            #expect(try DPIAnalysisResponse.parse(Array(response.responseBody().utf8)) == .success(response))
        }
        let body = cases[1].responseBody(timestamp: "2026-11-24 18:00:00")
        #expect(body.contains(#""DPIrule": [{"C_1": "4e6574666c6978"}]"#))
        #expect(body.contains(#""timestamp": "2026-11-24 18:00:00""#))
        guard case .rules(let found) = cases[1] else { return }
        #expect(found.rules[0].printableText == "Netflix")
    }

    @Test("the reference's probe answer (no status, no extensions) is read as a probe")
    func referenceProbe() throws {
        let body =
            #"{"success": true, "response": {"testPacket": "C_1", "testRegionLeft": 10, "testRegionRight": 230}}"#
        let parsed = try DPIAnalysisResponse.parse(Array(body.utf8))
        guard case .success(.probe(let probe)) = parsed else {
            Issue.record("not a probe: \(parsed)")
            return
        }
        #expect(probe.testPacket == "C_1" && probe.testRegionLeft == 10 && probe.testRegionRight == 230)
        #expect(!probe.isServerPacket && probe.packetNumber == 1)
    }

    @Test("refusals carry a machine-readable code")
    func refusal() throws {
        let body = DPIAnalysisResponse.failureBody(.regionMismatch, "reported [10,20) but the probe is C_1[10,230)")
        #expect(DPIAnalysisResponse.errorCode(Array(body.utf8)) == .regionMismatch)
        guard case .failure(let failure) = try DPIAnalysisResponse.parse(Array(body.utf8)) else {
            Issue.record("refusal parsed as success")
            return
        }
        #expect(failure.message.hasPrefix("reported [10,20)"))
    }

    @Test("a rule whose hex does not match its region is refused")
    func inconsistentRule() {
        let body =
            #"{"success": true, "response": {"status": "rule", "rules": [{"packet": "C_1", "left": 1, "right": 4, "hex": "00"}]}}"#
        #expect(throws: WeheWireError.self) { try DPIAnalysisResponse.parse(Array(body.utf8)) }
    }
}
