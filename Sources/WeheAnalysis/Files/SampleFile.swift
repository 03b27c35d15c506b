package import Foundation
package import WeheCore

/// Reads throughput sample files for `wehe analyze` and similar tools.
///
/// Two shapes are accepted, both JSON:
/// * a plain array of Mbit/s values, `[1.5, 2.25, 0, 3]`; the samples are then stamped `1, 2, 3, …` because the
///   interval is unknown (only the values matter to the analysis);
/// * the client upload / server storage shape of protocol.md section 8, `[[mbps…], [times…]]`, two arrays of equal
///   length.
///
/// Numbers may use exponent notation as Java prints it (`2.2E-4`). No sample is dropped here; the last-sample trim
/// the server applies to uploads is `DifferentiationConfiguration.dropsLastSample`.
package enum SampleFile {
    /// Parses the contents of a sample file.
    /// - Parameters:
    ///   - data: the file's bytes.
    ///   - name: the file name, used in error messages.
    /// - Throws: `WeheAnalysisError` with code `.malformedSampleFile` when the text is not JSON or not one of the
    ///   two shapes, or the file holds no sample; `.mismatchedLengths` when the two lists differ in length;
    ///   `.invalidSample` for a negative or non-finite throughput; `.invalidTimes` for a decreasing or non-finite
    ///   time.
    package static func parse(_ data: Data, name: String) throws(WeheAnalysisError) -> ThroughputSeries {
        let content: Content
        do {
            content = try JSONDecoder().decode(Content.self, from: data)
        } catch let error as DecodingError {
            throw WeheAnalysisError(.malformedSampleFile, "\(name): \(describe(error))")
        } catch {
            throw WeheAnalysisError(.malformedSampleFile, "\(name): \(error)")
        }
        let series: ThroughputSeries
        switch content {
        case .values(let values):
            series = ThroughputSeries(mbps: values, interval: 1)
        case .valuesAndTimes(let values, let times):
            guard values.count == times.count else {
                throw WeheAnalysisError(
                    .mismatchedLengths,
                    "\(name): \(values.count) throughput values but \(times.count) timestamps"
                )
            }
            series = ThroughputSeries(mbps: values, times: times)
        }
        guard series.count > 0 else {
            throw WeheAnalysisError(.malformedSampleFile, "\(name): the file holds no throughput sample")
        }
        return try SeriesValidation.validated(series, role: name)
    }

    /// Reads and parses a sample file from disk.
    /// - Throws: `WeheAnalysisError` with code `.unreadableFile` when the file cannot be read, and the errors of
    ///   `parse(_:name:)`.
    package static func read(path: String) throws(WeheAnalysisError) -> ThroughputSeries {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw WeheAnalysisError(
                .unreadableFile, "\(path): cannot read the file (\(error.localizedDescription))")
        }
        return try parse(data, name: path)
    }

    private enum Content: Decodable {
        case values([Double])
        case valuesAndTimes([Double], [Double])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let values = try? container.decode([Double].self) {
                self = .values(values)
                return
            }
            if let lists = try? container.decode([[Double]].self) {
                guard lists.count == 2 else {
                    throw DecodingError.dataCorruptedError(
                        in: container,
                        debugDescription: "expected exactly two lists [[throughputs], [times]], found \(lists.count)"
                    )
                }
                self = .valuesAndTimes(lists[0], lists[1])
                return
            }
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "expected a JSON array of Mbit/s numbers or [[throughputs], [times]]"
            )
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty, let underlying = context.underlyingError {
                return "not valid JSON (\(underlying.localizedDescription))"
            }
            return context.debugDescription
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context):
            return context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }
}
