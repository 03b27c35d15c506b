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
