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
