import Testing
import WeheCore

@Suite("control (bit-inverted) trace generation")
struct ControlTraceGeneratorTests {
    @Test("binary payloads are inverted byte by byte")
    func binary() {
        let generator = ControlTraceGenerator()
        #expect(generator.invert([0x00, 0xFF, 0x16, 0x03]) == [0xFF, 0x00, 0xE9, 0xFC])
        #expect(generator.invert([]) == [])
    }

    @Test("an HTTP request keeps method, separators, parameter names, version and header names")
    func httpRequest() {
        let request = Array("GET /a/b.mp4?q=hd&t=xy HTTP/1.1\r\nHost: cdn.example\r\nAccept: */*\r\n\r\nBODY".utf8)
        let control = ControlTraceGenerator().invert(request)
        #expect(control.count == request.count)
        func inv(_ text: String) -> [UInt8] { text.utf8.map { $0 ^ 0xFF } }
        var expected = Array("GET ".utf8) + inv("/a/b.mp4") + Array("?q=".utf8) + inv("hd") + Array("&t=".utf8)
        expected += inv("xy") + Array(" HTTP/1.1\r\nHost: ".utf8) + inv("cdn.example") + Array("\r\nAccept: ".utf8)
        expected += inv("*/*") + Array("\r\n\r\n".utf8) + inv("BODY")
        #expect(control == expected)
    }

    @Test("with parser artefacts: '?' after a bare path and odd lengths lose their last byte")
    func artefacts() {
        let request = Array("GET /x HTTP/1.1\r\nHost: h\r\n\r\n".utf8)  // 28 bytes, + '?' = 29 → cut to 28
        let legacy = ControlTraceGenerator(reproduceParserArtefacts: true)
        let control = legacy.invert(request)
        #expect(control.count == request.count)
        #expect(Array(control[0..<4]) == Array("GET ".utf8))
        #expect(control[6] == UInt8(ascii: "?"))
        #expect(control.last == 13)  // the final "\n" was cut
        #expect(legacy.invert([1, 2, 3]) == [0xFE, 0xFD])
        #expect(ControlTraceGenerator().invert([1, 2, 3]) == [0xFE, 0xFD, 0xFC])
    }

    @Test("an HTTP response keeps its status line and header names")
    func httpResponse() {
        let response = Array("HTTP/1.1 200 OK\r\nServer: s\r\n\r\nab".utf8)
        let control = ControlTraceGenerator().invert(response)
        #expect(Array(control[0..<17]) == Array("HTTP/1.1 200 OK\r\n".utf8))
        #expect(control.suffix(2) == [UInt8(ascii: "a") ^ 0xFF, UInt8(ascii: "b") ^ 0xFF])
    }

    @Test("control names insert Random before the date")
    func names() {
        #expect(ControlTraceGenerator.controlName(of: "Youtube-02202024") == "YoutubeRandom-02202024")
        #expect(ControlTraceGenerator.controlName(of: "custom") == "customRandom")
    }

    @Test("region inversion flips exactly the bytes in range, clamped to the payload")
    func region() {
        #expect(ControlTraceGenerator.invertRegion(of: [0, 0, 0, 0], 1..<3) == [0, 0xFF, 0xFF, 0])
        #expect(ControlTraceGenerator.invertRegion(of: [0, 0], 1..<10) == [0, 0xFF])
    }
}
