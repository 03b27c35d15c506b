import Foundation
import WeheCore
import WeheStore
import WeheWire

/// The history's tests as people and programs read them: app names from the catalog (when the replay directory is
/// found), dates with their time zone, the verdict with its direction and reason, and every number, for
/// `wehe results` (table and `--json`), `results export` (CSV or JSON) and `results show --json / --summary`.
struct ResultRecords {
    /// Replay name → the catalog's app name ("Molotovtv-08012019" → "Molotov TV"); empty when no catalog is found.
    let appNames: [String: String]
    /// Replay name (both spellings) → the catalog's test id, when one test has that replay (port tests share it).
    var testIDs: [String: String] = [:]
    /// Replay names (both spellings) of the user's own recorded tests (`wehe record`), shown apart.
    var recordedReplays: Set<String> = []
    let strings: Strings

    /// Reads the catalog of the replay directory (`--replays`, or the default search), if there is one: a history
    /// is still listed without it, by replay names.
    static func load(replays: ReplayDirectoryOption, strings: Strings) -> ResultRecords {
        var names: [String: String] = [:]
        var ids: [String: String] = [:]
        var shared: Set<String> = []
        var recorded: Set<String> = []
        // The catalog with the user's recordings, as `wehe run` reads it.
        if let library = try? replays.library() {
            if let catalog = try? library.catalog() {
                for entry in catalog.entries {
                    // Port tests share their original's replay name ("port_853") between the small and the large
                    // test: name it by the port, without the size, unless only one of them exists.
                    let replay = entry.originalFile.replacingOccurrences(of: ".pcap_client_all.json", with: "")
                    for key in Set([replay, replay.replacingOccurrences(of: "_", with: "-")]) {
                        if ids[key] != nil { shared.insert(key) }
                        ids[key] = entry.id
                        if entry.recorded { recorded.insert(key) }
                    }
                    for key in Set([replay, replay.replacingOccurrences(of: "_", with: "-")]) {
                        if let existing = names[key], existing != entry.name, entry.isPortTest {
                            names[key] = existing.components(separatedBy: " (").first ?? existing
                        } else {
                            names[key] = entry.name
                        }
                    }
                }
            }
        }
        for replay in shared { ids[replay] = nil }
        return ResultRecords(appNames: names, testIDs: ids, recordedReplays: recorded, strings: strings)
    }

    /// The app name of a replay, else the replay name itself.
    func app(_ replayName: String) -> String {
        appNames[replayName] ?? appNames[replayName.replacingOccurrences(of: "-", with: "_")] ?? replayName
    }

    /// The app name people read: a test the user recorded is marked, since the Wehe team did not make it.
    func displayApp(_ replayName: String) -> String {
        recordedReplays.contains(replayName) ? app(replayName) + " " + strings.recordedMark : app(replayName)
    }

    /// "2026-11-24 15:02" in the local zone, or with the year left out for this year's tests (table).
    static func shortDate(_ date: Date, now: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone.current
        let calendar = Calendar.current
        let sameYear = calendar.component(.year, from: date) == calendar.component(.year, from: now)
        formatter.dateFormat = sameYear ? "MM-dd HH:mm" : "yyyy-MM-dd"
        return formatter.string(from: date)
    }

    /// ISO 8601 with the local offset ("2026-11-24T15:02:11+01:00").
    static func isoDate(_ date: Date) -> String { ResultRecord.isoDate(date) }

    /// The local zone as people read it: "CET (UTC+01:00)", "UTC".
    static func zoneName(_ date: Date = Date()) -> String {
        let zone = TimeZone.current
        let seconds = zone.secondsFromGMT(for: date)
        let sign = seconds < 0 ? "-" : "+"
        let offset = String(format: "UTC%@%02d:%02d", sign, abs(seconds) / 3600, abs(seconds) % 3600 / 60)
        let abbreviation = zone.abbreviation(for: date) ?? ""
        if seconds == 0 && (abbreviation == "GMT" || abbreviation == "UTC" || abbreviation.isEmpty) { return "UTC" }
        return abbreviation.isEmpty || abbreviation.hasPrefix("GMT") ? offset : "\(abbreviation) (\(offset))"
    }

    /// The table of `wehe results`: 80 columns for app names of up to 12 characters (names are not cut below 40, so a
    /// port test keeps its size class and size, wider then); when a listed test has a
    /// sensitive verdict (interleaved rounds), one more column (SENS) shows it in a few characters.
    func table(_ rows: [TestOverview]) -> String {
        let showsSensitive = rows.contains { $0.sensitive != nil }
        let body = rows.map { row -> [String] in
            let summary = row.analysis
            let cells: [String] = [
                String(row.key.historyCount), Self.shortDate(row.metadata.startedAt),
                Terminal.truncated(displayApp(row.metadata.replayName), 40),
                summary.map(strings.tableVerdict) ?? "-",
                summary == nil ? "-" : strings.speedCell(Self.originalMean(row)),
                summary == nil ? "-" : strings.speedCell(Self.controlMean(row)),
                summary.map {
                    $0.ksPValue < 0 || $0.insufficientDataReason != nil
                        ? "-" : ResultOutput.shortNumber($0.ksPValue, strings: strings)
                } ?? "-",
                summary.map { Terminal.format($0.areaTest, decimals: 2, language: strings.language) } ?? "-",
            ]
            return showsSensitive ? cells + [strings.sensitiveMark(row.sensitive)] : cells
        }
        var header = [
            "ID", strings.dateHeader, strings.testHeader, strings.verdictHeader, strings.originalHeader,
            strings.controlHeader, strings.pValueHeader, strings.areaHeader,
        ]
        if showsSensitive { header.append(strings.sensitiveHeader) }
        let text = Terminal.table(header: header, rows: body, rightAligned: [0, 4, 5, 6, 7])
        var caption = Terminal.wrap(strings.tableCaption(zone: Self.zoneName()))
        if showsSensitive { caption += "\n" + Terminal.wrap(strings.sensitiveCaption) }
        return text + "\n" + caption
    }

    /// The record of one test (`ResultRecord`: the keys of every JSON output and of the CSV's columns).
    func record(_ row: TestOverview) -> ResultRecord {
        ResultRecord(overview: row, name: app(row.metadata.replayName), test: testIDs[row.metadata.replayName])
    }

    /// Every field of one test, as a JSON object (also one CSV row: the same keys in the same order).
    func fields(_ row: TestOverview) -> [(String, JSONValue)] { record(row).jsonMembers }

    /// One JSON object per test.
    func json(_ row: TestOverview) -> JSONValue { .object(fields(row)) }

    /// CSV (RFC 4180): a header line, then one line per test; text fields quoted when needed.
    func csv(_ rows: [TestOverview]) -> String {
        // Every key, the optional ones too, so that every line has the same columns.
        var every = record(
            TestOverview(
                key: TestKey(userID: "", historyCount: 0),
                metadata: TestMetadata(replayName: "", startedAt: Date()), originalMeanMbps: nil,
                controlMeanMbps: nil, analysis: nil))
        every.scheduled = false
        let keys = every.fields.map(\.0)
        var lines = [keys.joined(separator: ",")]
        for row in rows {
            let values = Dictionary(fields(row), uniquingKeysWith: { first, _ in first })
            lines.append(
                keys.map { key -> String in
                    switch values[key] ?? .null {
                    case .null: return ""
                    case .string(let text): return Self.csvField(text)
                    case .number(_, let text): return text
                    case let value: return Self.csvField(value.serialized())
                    }
                }.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A paragraph a journalist can paste: app, provider, date with zone, server, both speeds, verdict, version.
    func summary(_ row: TestOverview) -> String {
        let date = Self.isoDate(row.metadata.startedAt)
        let zone = Self.zoneName(row.metadata.startedAt)
        let app = app(row.metadata.replayName)
        let kind = row.metadata.networkType.flatMap(NetworkProvider.LinkKind.init(rawValue:))
        let provider = row.metadata.provider.map { name in
            name + (kind.flatMap { strings.linkKindText($0) }.map { " (\($0))" } ?? "")
        }
        let server = row.metadata.serverName ?? "?"
        // Our version as recorded with the test; older records held the protocol version declared on the side
        // channel, which is not ours, so they name no version.
        let version = row.metadata.clientVersion.flatMap { $0 == WeheVersion.declaredClientVersion ? nil : $0 }
        guard let summary = row.analysis else {
            return strings.summaryWithoutAnalysis(app: app, date: date, zone: zone, server: server)
        }
        return strings.summaryParagraph(
            app: app, provider: provider, date: date, zone: zone, server: server, summary: summary,
            clientVersion: version, adaptive: row.sensitive, originalMeasured: Self.originalMean(row) != nil,
            controlMeasured: Self.controlMean(row) != nil)
    }
}
