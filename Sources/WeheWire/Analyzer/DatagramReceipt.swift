/// Which of a UDP replay's server datagrams reached the client: our extension of the analyzer API for WeHeY's loss
/// test on UDP replays (the server sees no acknowledgements, so only the client can tell what was lost).
///
/// The client names every datagram it received, in arrival order, by a 32-bit FNV-1a digest of its payload; the
/// server matches the digests against what it sent and charges the rest as lost. Digests instead of sequence numbers
/// leave the replayed bytes untouched, so a classifier on the path sees exactly the recorded payloads.
///
/// Request (POST `/Results`, form body): `command=udpLoss&userID=…&historyCount=…&testID=…&received=<hex>`, where
/// `received` is eight lowercase hex digits per datagram, concatenated. A server that does not know the command
/// answers `{"success": false, …}`; the client then simply has no UDP loss timeline on that server.
public enum DatagramReceipt {
    /// The analyzer command.
    public static let command = "udpLoss"
    /// Digests one report may carry: 7,000 × 8 hex digits stays well inside an analyzer's 64 KiB body.
    public static let maximumDatagrams = 7_000

    /// FNV-1a (32 bits) of `payload`.
    public static func digest(_ payload: some Sequence<UInt8>) -> UInt32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in payload {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }

    /// The `received` field for `digests` (at most `maximumDatagrams` of them: later ones are left out).
    public static func encode(_ digests: [UInt32]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(digests.count, maximumDatagrams) * 8)
        for digest in digests.prefix(maximumDatagrams) {
            for shift in stride(from: 28, through: 0, by: -4) {
                bytes.append(hex[Int((digest >> UInt32(shift)) & 0xf)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The digests of a `received` field, or `nil` when it is not a whole number of 8-hex-digit groups or holds more
    /// than `maximumDatagrams`.
    public static func decode(_ text: String) -> [UInt32]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 8 == 0, bytes.count / 8 <= maximumDatagrams else { return nil }
        var digests: [UInt32] = []
        digests.reserveCapacity(bytes.count / 8)
        var index = 0
        while index < bytes.count {
            var value: UInt32 = 0
            for byte in bytes[index..<index + 8] {
                guard let nibble = Self.nibble(byte) else { return nil }
                value = value << 4 | nibble
            }
            digests.append(value)
            index += 8
        }
        return digests
    }

    /// For each sent datagram (digests in sending order), whether it arrived: each received digest, in arrival order,
    /// takes the earliest sent datagram with that digest not taken yet. Returns the flags and how many received
    /// digests matched nothing that was sent.
    public static func delivered(sent: [UInt32], received: [UInt32]) -> (flags: [Bool], unmatched: Int) {
        var positions: [UInt32: [Int]] = [:]
        for (index, digest) in sent.enumerated() { positions[digest, default: []].append(index) }
        var next: [UInt32: Int] = [:]
        var flags = [Bool](repeating: false, count: sent.count)
        var unmatched = 0
        for digest in received {
            guard let candidates = positions[digest] else {
                unmatched += 1
                continue
            }
            let cursor = next[digest, default: 0]
            guard cursor < candidates.count else {
                unmatched += 1
                continue
            }
            flags[candidates[cursor]] = true
            next[digest] = cursor + 1
        }
        return (flags, unmatched)
    }

    private static func nibble(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
