import WeheCore
import WeheStore
import WeheWire

/// Localization runs in `wehe results` (a table after the tests, `kind` `"localization"` in JSON) and in
/// `wehe results show <H+1 or H+2>`.
enum LocalizationRows {
    /// The id shown for a run: its two history counts, `8+9`.
    static func id(_ run: LocalizationRun) -> String {
        run.historyCounts.map(String.init).joined(separator: "+")
    }

    static func json(_ run: LocalizationRun) -> String {
        let members: [(String, JSONValue)] = [
            ("kind", .string("localization")),
            ("id", .string(id(run))),
            ("historyCounts", .array(run.historyCounts.map { .number(Double($0), text: String($0)) })),
            ("date", .string(ResultRecords.isoDate(run.requestedAt))),
            ("replay", .string(run.replayName)),
            ("localization", .string(run.summary?.verdict.rawValue ?? "")),
            ("servers", .array(run.servers.map(JSONValue.string))),
            ("singleHistoryCount", run.singleHistoryCount.map { .number(Double($0), text: String($0)) } ?? .null),
            ("note", run.summary?.note.map(JSONValue.string) ?? .null),
        ]
        return JSONValue.object(members).serialized()
    }

    static func table(_ runs: [LocalizationRun], strings: Strings) -> String {
        let rows = runs.map { run in
            [
                id(run), ResultRecords.shortDate(run.requestedAt), run.replayName,
                run.summary.map { strings.localizationShort($0.verdict.rawValue) } ?? "-",
                run.servers.joined(separator: " + "),
            ]
        }
        return strings.localizationHeader + "\n"
            + Terminal.table(
                header: ["ID", strings.dateHeader, strings.testHeader, strings.verdictHeader, strings.serversHeader],
                rows: rows, rightAligned: [])
    }

    static func details(_ run: LocalizationRun, strings: Strings) -> [String] {
        var lines = ["\(run.replayName)  #\(id(run))  \(ResultRecords.isoDate(run.requestedAt))"]
        let verdict = run.summary?.verdict.rawValue ?? "inconclusive"
        lines.append("  " + strings.localizationLine(verdict, reason: nil))
        lines.append("  servers: \(run.servers.joined(separator: ", "))")
        if let single = run.singleHistoryCount {
            lines.append("  single-server test: #\(single) on \(run.singleServer ?? "?")")
        }
        if let summary = run.summary {
            if let p = summary.mwuPValue {
                let means = summary.simultaneousMeansMbps.map { Terminal.format($0, decimals: 2) }.joined(
                    separator: " + ")
                let single = summary.singleMeanMbps.map { Terminal.format($0, decimals: 2) } ?? "-"
                lines.append("  throughput-sum test: p \(p)  (pair \(means) Mbit/s, single \(single) Mbit/s)")
            }
            if !summary.correlationPValues.isEmpty {
                let values = summary.correlationPValues.map { ResultOutput.shortNumber($0, strings: strings) }.joined(
                    separator: " ")
                lines.append("  loss-correlation test: p \(values)")
            }
            if let note = summary.note { lines.append("  note: \(note)") }
        }
        return lines
    }
}
