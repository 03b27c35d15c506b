public import WeheCore

/// The client's throughput samples as sent on the side channel (protocol.md section 8):
/// `[[mbps_1, …, mbps_k], [t_1, …, t_k]]`. Numbers may be integers or doubles in any JSON notation (the Java client
/// writes `2.20944E-4`).
public enum ThroughputUpload {
    /// Largest number of samples accepted (a 45 s replay at 0.08 s intervals gives ~560).
    public static let maximumSamples = 100_000

    /// Formats samples like the Java client: whole numbers without `.0`.
    public static func body(_ series: ThroughputSeries) -> String {
        "[[" + series.mbps.map(JSONText.compactNumber).joined(separator: ",") + "],["
            + series.times.map(JSONText.compactNumber).joined(separator: ",") + "]]"
    }

    /// Parses an upload.
    /// - Throws: `WeheWireError` for malformed JSON, a wrong shape, unequal lengths, non-finite or negative values.
    public static func parse(_ body: [UInt8]) throws(WeheWireError) -> ThroughputSeries {
        let root = try JSONValue.parse(body)
        guard case .array(let lists) = root, lists.count == 2, case .array(let values) = lists[0],
            case .array(let times) = lists[1]
        else {
            throw WeheWireError(
                .unexpectedStructure, "throughput upload must be [[values…],[times…]]", field: "samples")
        }
        guard values.count == times.count else {
            throw WeheWireError(
                .invalidValue,
                "throughput upload has \(values.count) values but \(times.count) times",
                field: "samples"
            )
        }
        guard values.count <= maximumSamples else {
            throw WeheWireError(
                .tooLarge, "throughput upload has more than \(maximumSamples) samples", field: "samples")
        }
        func numbers(_ list: [JSONValue], _ name: String) throws(WeheWireError) -> [Double] {
            var result: [Double] = []
            result.reserveCapacity(list.count)
            for (index, item) in list.enumerated() {
                guard case .number(let value, _) = item, value.isFinite, value >= 0 else {
                    throw WeheWireError(
                        .invalidValue, "\(name) \(index) is not a finite non-negative number", field: "samples")
                }
                result.append(value)
            }
            return result
        }
        return ThroughputSeries(mbps: try numbers(values, "value"), times: try numbers(times, "time"))
    }
}
