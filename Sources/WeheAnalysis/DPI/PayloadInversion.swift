/// Builds the modified payload of a DPI probe: every bit of the bytes in the probed region is inverted
/// (analysis.md section 5.4 item 6, the intended behaviour).
///
/// Unlike the iOS client (which inverts only the significant bits of each byte) and the Android client (which
/// shifts the region one byte to the left), all 8 bits of exactly the bytes `[left, right)` flip, so each byte `b`
/// becomes `b ^ 0xFF`. The packet to modify is the one the probe names, on whichever side sent it; for server packets
/// the client asks the server to apply the same inversion.
public enum PayloadInversion {
    /// Returns `payload` with the bytes in `region` inverted.
    /// - Throws: `WeheAnalysisError` with code `.invalidRegion` when the region is negative or extends beyond the
    ///   payload.
    public static func inverting(_ payload: [UInt8], region: Range<Int>) throws(WeheAnalysisError) -> [UInt8] {
        var copy = payload
        try invert(&copy, region: region)
        return copy
    }

    /// Inverts the bytes in `region` of `payload` in place.
    /// - Throws: `WeheAnalysisError` with code `.invalidRegion` when the region is negative or extends beyond the
    ///   payload; the payload is then unchanged.
    public static func invert(_ payload: inout [UInt8], region: Range<Int>) throws(WeheAnalysisError) {
        guard region.lowerBound >= 0, region.upperBound <= payload.count else {
            throw WeheAnalysisError(
                .invalidRegion,
                "region [\(region.lowerBound),\(region.upperBound)) does not fit a \(payload.count)-byte payload"
            )
        }
        for index in region {
            payload[index] ^= 0xFF
        }
    }
}
