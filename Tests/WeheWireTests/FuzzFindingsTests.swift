import Testing
import WeheCore
import WeheWire

/// Defects the libFuzzer targets (Fuzz/, scripts/fuzz.sh) found; each input is also kept in `Fuzz/corpus/<target>`.
@Suite("inputs found by fuzzing")
struct FuzzFindingsTests {
    static let pair = "010.000.000.001.50000-093.184.216.034.00443"

    /// Two packets whose response lengths add up past `Int.max`: `bytesDown` and the derived server trace trapped on
    /// the overflow. Response lengths are now bounded when the file is read.
    @Test("a client trace with response lengths summing past Int.max is refused, naming the entry")
    func hugeResponseLength() {
        let packet =
            #"{"c_s_pair": "\#(Self.pair)", "payload": "", "timestamp": 0, "response_len": 9223372036854775807, "response_hash": null}"#
        let text = #"[[\#(packet), \#(packet)], [], ["\#(Self.pair)"], "T"]"#
        do {
            let trace = try ClientTraceDecoder().decode(Array(text.utf8))
            Issue.record("decoded \(trace.packets.count) packets with response_len Int.max")
        } catch {
            #expect(error.code == .invalidValue, "\(error)")
            #expect(error.entry == 0, "\(error)")
            #expect(error.field == "response_len", "\(error)")
        }
    }

    @Test("the largest allowed response length still decodes and sums")
    func largestResponseLength() throws {
        let limit = ClientTraceDecoder.maximumResponseLength
        let packet =
            #"{"c_s_pair": "\#(Self.pair)", "payload": "", "timestamp": 0, "response_len": \#(limit), "response_hash": "0123456789abcdef0123456789abcdef01234567"}"#
        let text = #"[[\#(packet), \#(packet)], [], ["\#(Self.pair)"], "T"]"#
        let trace = try ClientTraceDecoder().decode(Array(text.utf8))
        #expect(trace.bytesDown == 2 * limit)
        #expect(ServerTrace(derivingFrom: trace).tcpFlows[0].groups.map(\.responseLength) == [limit, limit])
    }

    @Test("a server trace with a length past the client trace bound is refused with its field")
    func hugeServerTraceLength() {
        let text =
            #"{"format": "wehe-server-trace", "version": 1, "replayName": "x", "tcp": [{"c_s_pair": "\#(Self.pair)", "groups": [{"request_len": 1, "response_len": 9223372036854775807, "request_time": 0}]}]}"#
        do {
            _ = try ServerTraceCodec().decode(Array(text.utf8))
            Issue.record("decoded a response_len of Int.max")
        } catch {
            #expect(error.field == "tcp[0].groups[0].response_len", "\(error)")
        }
    }
}
