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
