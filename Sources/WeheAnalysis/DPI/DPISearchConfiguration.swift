/// Limits of the DPI search (analysis.md section 5.3). The defaults are the reference server's.
public struct DPISearchConfiguration: Sendable, Hashable, Codable {
    /// Leading bytes of every packet that are never inverted (10): some networks validate the TLS record header
    /// and hang otherwise.
    public var skippedPrefix: Int
    /// Regions wider than this many bytes (4) are split in two; narrower ones are probed byte by byte.
    public var byteByByteWidth: Int
    /// The search gives up after this many packets without a matching byte (10).
    public var maxTestedPackets: Int
    /// The search gives up after this many probes (200).
    public var maxProbes: Int

    /// Creates a configuration with the reference defaults.
    public init(skippedPrefix: Int = 10, byteByByteWidth: Int = 4, maxTestedPackets: Int = 10, maxProbes: Int = 200) {
        self.skippedPrefix = skippedPrefix
        self.byteByByteWidth = byteByByteWidth
        self.maxTestedPackets = maxTestedPackets
        self.maxProbes = maxProbes
    }
}
