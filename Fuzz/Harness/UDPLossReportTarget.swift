import WeheWire

/// The client's UDP loss report (`DatagramReceipt`): the `received` field of `command=udpLoss` that the server
/// decodes, and the matching of received digests against the server's log of sent datagrams.
///
/// Input: the whole input is the `received` text; byte 0 also splits the input into a sent and a received list of
/// small digests (values 0-7, so that repeats and misses are common) for `delivered`.
///
/// Invariants: `decode` accepts exactly the texts of whole 8-hex-digit groups (at most `maximumDatagrams`), and
/// `encode` of what it accepted is the text in lowercase; `delivered` flags each sent datagram at most once, the
/// earliest unclaimed copies first, as many of each digest as were both sent and received, and counts the rest of
/// the received digests as unmatched.
enum UDPLossReportTarget {
    static func check(_ input: [UInt8]) {
        receivedField(input)
        guard let first = input.first else { return }
        let rest = input.dropFirst()
        let split = rest.isEmpty ? 0 : Int(first) % (rest.count + 1)
        let sent = rest.prefix(split).map { UInt32($0 & 7) }
        let received = rest.dropFirst(split).map { UInt32($0 & 7) }
        delivered(sent: sent, received: received)
    }

    static func receivedField(_ input: [UInt8]) {
        let text = String(decoding: input, as: UTF8.self)
        let bytes = Array(text.utf8)
        let isHex = bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
        }
        let acceptable = isHex && bytes.count % 8 == 0 && bytes.count / 8 <= DatagramReceipt.maximumDatagrams
        guard let digests = DatagramReceipt.decode(text) else {
            require(!acceptable, "a valid received field (\(bytes.count) hex digits) was refused")
            return
        }
        require(acceptable, "an invalid received field was accepted: \(text.prefix(40))")
        require(digests.count == bytes.count / 8, "\(digests.count) digests from \(bytes.count) digits")
        let lowercase = String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x46 ? $0 + 0x20 : $0 }, as: UTF8.self)
        require(DatagramReceipt.encode(digests) == lowercase, "received field changed in a round trip")
    }

    static func delivered(sent: [UInt32], received: [UInt32]) {
        let (flags, unmatched) = DatagramReceipt.delivered(sent: sent, received: received)
        require(flags.count == sent.count, "\(flags.count) flags for \(sent.count) sent datagrams")
        var expectedUnmatched = 0
        for digest in Set(sent + received) {
            let sentPositions = sent.indices.filter { sent[$0] == digest }
            let receivedCount = received.filter { $0 == digest }.count
            let matched = min(sentPositions.count, receivedCount)
            expectedUnmatched += receivedCount - matched
            for (rank, position) in sentPositions.enumerated() {
                require(
                    flags[position] == (rank < matched),
                    "sent datagram \(position) (digest \(digest), copy \(rank)) flagged \(flags[position])")
            }
        }
        require(unmatched == expectedUnmatched, "\(unmatched) unmatched, expected \(expectedUnmatched)")
    }
}
