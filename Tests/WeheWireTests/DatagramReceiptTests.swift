import Testing
import WeheWire

@Suite("UDP datagram receipts (udpLoss report)")
struct DatagramReceiptTests {
    @Test("FNV-1a 32 digests match the published test vectors")
    func digests() {
        #expect(DatagramReceipt.digest([UInt8]()) == 0x811c_9dc5)
        #expect(DatagramReceipt.digest(Array("a".utf8)) == 0xe40c_292c)
        #expect(DatagramReceipt.digest(Array("foobar".utf8)) == 0xbf9c_f968)
    }

    @Test("the received field round-trips and is eight lowercase hex digits per datagram")
    func roundTrip() {
        let digests: [UInt32] = [0, 1, 0xdead_beef, 0xffff_ffff, 0x0a0b_0c0d]
        let text = DatagramReceipt.encode(digests)
        #expect(text == "0000000000000001deadbeefffffffff0a0b0c0d")
        #expect(DatagramReceipt.decode(text) == digests)
        #expect(DatagramReceipt.decode("DEADBEEF") == [0xdead_beef])
        #expect(DatagramReceipt.decode("") == [])
    }

    @Test("malformed or oversized fields are refused", arguments: ["123", "deadbeeg", "dead beef", "+0000001"])
    func malformed(text: String) {
        #expect(DatagramReceipt.decode(text) == nil)
    }

    @Test("more than the maximum number of datagrams: encode keeps the first ones, decode refuses")
    func oversized() {
        let many = [UInt32](repeating: 7, count: DatagramReceipt.maximumDatagrams + 1)
        #expect(DatagramReceipt.decode(DatagramReceipt.encode(many))?.count == DatagramReceipt.maximumDatagrams)
        #expect(DatagramReceipt.decode(String(repeating: "00000007", count: many.count)) == nil)
    }

    @Test("matching: each arrival takes the earliest unmatched sent datagram with its digest; strangers are counted")
    func matching() {
        // Sent: A B A C A. Received (reordered): A C A X — the first two As and C arrived, X was never sent.
        let (a, b, c, x): (UInt32, UInt32, UInt32, UInt32) = (1, 2, 3, 99)
        let result = DatagramReceipt.delivered(sent: [a, b, a, c, a], received: [a, c, a, x])
        #expect(result.flags == [true, false, true, true, false])
        #expect(result.unmatched == 1)
        // A datagram received more often than it was sent (a duplicate on the path) is a stranger too.
        #expect(DatagramReceipt.delivered(sent: [b], received: [b, b]).unmatched == 1)
        #expect(DatagramReceipt.delivered(sent: [], received: []).flags.isEmpty)
    }
}
