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
