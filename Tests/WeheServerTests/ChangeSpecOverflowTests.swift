import Testing
import WeheServer

/// A change spec whose region end overflows `Int` (found by reading `ServerPacketChange` while fuzzing the parsers):
/// `ReplaceW` at offset `Int.max` made the range check itself trap, so one side-channel message ended the server.
@Suite("Change spec regions that overflow Int")
struct ChangeSpecOverflowTests {
    @Test("ReplaceW at offset Int.max is refused as outside the packet, not an overflow trap")
    func overwriteAtIntMax() throws {
        let body = Array(#"[3, "ReplaceW", [9223372036854775807, "AB"]]"#.utf8)
        let change = try #require(try ServerPacketChange.parse(body))
        let replay = try #require(try ChangeSpecTests.catalogue().replay(named: "TinyWeb-11212026"))
        let error = try #require(throws: ReplayServerError.self) { try replay.applying(change) }
        #expect(error.message.contains("outside S_3"), "\(error.message)")
    }
}
