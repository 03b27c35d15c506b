import Testing

@testable import WeheTestbed

@Suite("Byte patterns")
struct BytePatternTests {
    @Test("text patterns are their UTF-8 bytes, hex patterns their digits")
    func parse() throws {
        #expect(try BytePattern.parse("googlevideo") == Array("googlevideo".utf8))
        #expect(try BytePattern.parse("hex:16 03 01") == [0x16, 0x03, 0x01])
        #expect(try BytePattern.parse("hex:|16|ff|") == [0x16, 0xFF])
    }

    @Test("malformed patterns throw", arguments: ["", "hex:", "hex:123", "hex:zz", "hex:0g"])
    func malformed(text: String) {
        #expect(throws: WeheTestbedError(.invalidArgument, "")) { try BytePattern.parse(text) }
    }

    @Test("occurrence at the start, the end, after a false start, and not at all")
    func occurs() {
        let haystack = Array("xxgooglgooglevideo.comx".utf8)
        #expect(BytePattern.occurs(Array("googlevideo".utf8), in: haystack))
        #expect(BytePattern.occurs(Array("xxg".utf8), in: haystack))
        #expect(BytePattern.occurs(Array("comx".utf8), in: haystack))
        #expect(BytePattern.occurs(Array("x".utf8), in: haystack, from: 22))
        #expect(!BytePattern.occurs(Array("googlevideo".utf8), in: haystack, from: 8))
        #expect(!BytePattern.occurs(Array("googlevideo.comxy".utf8), in: haystack))
        #expect(!BytePattern.occurs(Array("longer than the haystack itself".utf8), in: Array("short".utf8)))
    }

    @Test("the bit-inverted copy of a pattern does not contain it")
    func invertedControl() {
        let original = Array("Host: r3---sn-abc.googlevideo.com\r\n".utf8)
        let inverted = original.map { ~$0 }
        #expect(BytePattern.occurs(Array("googlevideo".utf8), in: original))
        #expect(!BytePattern.occurs(Array("googlevideo".utf8), in: inverted))
    }
}
