/// Names one payload-carrying packet of a replay trace for the DPI search: `C_k` for the k-th client packet, `S_k`
/// for the k-th server packet, numbered from 1 per side in trace order (analysis.md section 5.3).
public struct DPIPacketID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Which endpoint sent a packet.
    public enum Side: String, Sendable, Hashable, Codable {
        /// Sent by the client (`C_k`).
        case client = "C"
        /// Sent by the server (`S_k`).
        case server = "S"
    }

    /// The sending side.
    public var side: Side
    /// 1-based number of the packet among the payload-carrying packets of that side.
    public var number: Int

    /// Creates an identifier.
    public init(side: Side, number: Int) {
        self.side = side
        self.number = number
    }

    /// Parses `C_3` or `S_12`.
    /// - Throws: `WeheAnalysisError` with code `.invalidRegion` when the text is not of that form.
    public init(parsing text: String) throws(WeheAnalysisError) {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let side = Side(rawValue: String(parts[0])), let number = Int(parts[1]), number >= 1
        else {
            throw WeheAnalysisError(.invalidRegion, "'\(text)' is not a packet name like C_1 or S_2")
        }
        self.init(side: side, number: number)
    }

    /// `C_k` or `S_k`.
    public var description: String { "\(side.rawValue)_\(number)" }
}

/// A payload-carrying packet as the DPI search sees it: its name and payload length.
public struct DPIPacket: Sendable, Hashable, Codable {
    /// The packet's name.
    public var id: DPIPacketID
    /// Payload length in bytes.
    public var length: Int

    /// Creates a packet description.
    public init(id: DPIPacketID, length: Int) {
        self.id = id
        self.length = length
    }
}

/// One DPI probe: replay the original trace with bytes `region` of `packet` inverted.
public struct DPIProbe: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The packet to modify.
    public var packet: DPIPacketID
    /// The byte range `[left, right)` to invert.
    public var region: Range<Int>

    /// Creates a probe.
    public init(packet: DPIPacketID, region: Range<Int>) {
        self.packet = packet
        self.region = region
    }

    /// `C_1[10,230)`.
    public var description: String { "\(packet)[\(region.lowerBound),\(region.upperBound))" }
}

/// A classification rule found by the DPI search: the bytes of `packet` in `region` make the classifier match.
public struct DPIRule: Sendable, Hashable, Codable {
    /// The packet holding the matching bytes.
    public var packet: DPIPacketID
    /// The longest run of consecutive matching bytes.
    public var region: Range<Int>
    /// Every byte offset found to matter in that packet (the rule reports only the longest run of them).
    public var matchingBytes: [Int]

    /// Creates a rule.
    public init(packet: DPIPacketID, region: Range<Int>, matchingBytes: [Int]) {
        self.packet = packet
        self.region = region
        self.matchingBytes = matchingBytes
    }

    /// The matching content, cut out of the packet's payload.
    /// - Throws: `WeheAnalysisError` with code `.invalidRegion` if the payload is shorter than the region.
    public func content(in payload: [UInt8]) throws(WeheAnalysisError) -> [UInt8] {
        guard region.upperBound <= payload.count else {
            throw WeheAnalysisError(
                .invalidRegion, "rule region \(region) lies beyond the \(payload.count)-byte payload of \(packet)")
        }
        return Array(payload[region])
    }
}
