import Foundation
import WeheCore
import WeheStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The line formats of `wehe-server db export`.
///
/// JSON lines: one object per test with `userID`, `historyCount`, `startedAt` (ISO 8601 UTC, microseconds),
/// the metadata fields, `replays` (testID, name, receivedAt, `mbps` and `times` arrays, client duration) and
/// `analyses` (the analyzer's numbers, verdict, direction and thresholds). Numbers that are not finite are
/// written as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
///
/// CSV: RFC 4180 quoting, one row per test, means and the normal analysis, no samples.
enum TestExport {
    struct Line: Encodable {
        struct Replay: Encodable {
            var testID: Int
            var replayName: String
            var receivedAt: String
            var clientDurationSeconds: Double?
            var mbps: [Double]
            var times: [Double]
        }

        struct Analysis: Encodable {
            var comparedTestID: Int
            var analysedAt: String
            var summary: AnalysisSummary
        }

        var userID: String
        var historyCount: Int
        var startedAt: String
        var replayName: String
        var provider: String?
        var networkType: String?
        var clientVersion: String?
        var clientAddress: String?
        var serverName: String?
        var extraString: String?
        var replays: [Replay]
        var analyses: [Analysis]
    }

    /// `2024-05-13T12:00:00.000000Z`.
    static func timestamp(_ date: Date) -> String {
        let micros = date.storeMicroseconds
        var seconds = time_t(micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000)
        let fraction = micros - Int64(seconds) * 1_000_000
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), fraction
        )
    }

    /// Parses `YYYY-MM-DD` (UTC midnight) or an ISO 8601 time.
    static func parseDate(_ text: String) -> Date? {
        let full = ISO8601DateFormatter()
        if let date = full.date(from: text) { return date }
        full.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = full.date(from: text) { return date }
        full.formatOptions = [.withFullDate]
        return full.date(from: text)
    }

    static func jsonLine(_ record: TestRecord) throws -> String {
        let line = Line(
            userID: record.key.userID,
            historyCount: record.key.historyCount,
            startedAt: timestamp(record.metadata.startedAt),
            replayName: record.metadata.replayName,
            provider: record.metadata.provider,
            networkType: record.metadata.networkType,
            clientVersion: record.metadata.clientVersion,
            clientAddress: record.metadata.clientAddress,
            serverName: record.metadata.serverName,
            extraString: record.metadata.extraString,
            replays: record.replays.map {
                Line.Replay(
                    testID: $0.key.testID,
                    replayName: $0.replayName,
                    receivedAt: timestamp($0.receivedAt),
                    clientDurationSeconds: $0.clientDurationSeconds,
                    mbps: $0.samples.mbps,
                    times: $0.samples.times
                )
            },
            analyses: record.analyses.map {
                Line.Analysis(
                    comparedTestID: $0.comparedTestID, analysedAt: timestamp($0.analysedAt), summary: $0.summary)
            }
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity",
            negativeInfinity: "-Infinity",
            nan: "NaN"
        )
        return String(decoding: try encoder.encode(line), as: UTF8.self) + "\n"
    }

    static let csvColumns = [
        "user_id", "history_count", "started_at", "replay_name", "provider", "network_type", "client_version",
        "client_address", "server_name", "original_samples", "control_samples", "original_mean_mbps",
        "control_mean_mbps", "verdict", "direction", "area_test", "ks2_ratio_test", "ks_statistic", "ks_p_value",
        "area_threshold", "ks_p_threshold", "rule_set",
    ]

    static var csvHeader: String { csvColumns.joined(separator: ",") + "\r\n" }

    static func csvField(_ value: String?) -> String {
        guard let value else { return "" }
        if value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return value
    }

    static func csvLine(_ record: TestRecord) -> String {
        let original = record.replay(0)?.samples
        let control = record.replay(1)?.samples
        let analysis = record.mainAnalysis?.summary
        func number(_ value: Double?) -> String? { value.map { "\($0)" } }
        let fields: [String?] = [
            record.key.userID, "\(record.key.historyCount)", timestamp(record.metadata.startedAt),
            record.metadata.replayName, record.metadata.provider, record.metadata.networkType,
            record.metadata.clientVersion, record.metadata.clientAddress, record.metadata.serverName,
            original.map { "\($0.count)" }, control.map { "\($0.count)" }, number(original?.meanMbps),
            number(control?.meanMbps), analysis?.verdict.rawValue, analysis?.direction?.rawValue,
            number(analysis?.areaTest), number(analysis?.ks2RatioTest), number(analysis?.ksStatistic),
            number(analysis?.ksPValue), number(analysis?.thresholds.area), number(analysis?.thresholds.ksPValue),
            analysis?.thresholds.ruleSet,
        ]
        return fields.map(csvField).joined(separator: ",") + "\r\n"
    }

    /// Collects output and writes it in large blocks.
    struct BufferedOutput {
        let handle: FileHandle
        var buffer = Data()

        init(handle: FileHandle) {
            self.handle = handle
        }

        mutating func write(_ text: String) {
            buffer.append(contentsOf: text.utf8)
            if buffer.count >= 1 << 16 { flush() }
        }

        mutating func flush() {
            guard !buffer.isEmpty else { return }
            handle.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
}
