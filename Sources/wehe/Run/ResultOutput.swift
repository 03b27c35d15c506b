import WeheClient
import WeheCore
import WeheStore
import WeheWire

/// The `--json` object of one test and the verdict table.
enum ResultOutput {
    /// One JSON object per test: the result record (`ResultRecord`, `Docs/result.schema.json`) of a test run on
    /// `server`; the same keys as `wehe results --json`.
    static func json(_ result: TestResult, server: String?) -> String {
        ResultRecord(run: result, server: server).jsonText
    }

    /// The sensitive verdict's members (interleaved tests): `sensitiveVerdict` takes the values of `verdict`.
    static func sensitiveMembers(_ sensitive: SensitiveSummary) -> [(String, JSONValue)] {
        ResultRecord.sensitiveFields(sensitive).map { ($0.0, $0.1.json) }
    }

    /// The line printed when a throttle starts or stops during the replay; `nil` otherwise.
    static func changePointText(_ sensitive: SensitiveSummary?) -> String? {
        guard let change = sensitive?.changePoint, change.found, let effect = change.effectText else { return nil }
        return "change in time (\(change.rounds) rounds): \(effect), p \(JSONText.compactNumber(change.pValue))"
    }

    /// One line per interleaved test under the table: the sensitive verdict beside the published one.
    static func sensitiveLine(_ result: TestResult) -> String? {
        guard let sensitive = result.sensitive else { return nil }
        let kind = sensitive.stopReason == nil ? "sensitive verdict" : "adaptive verdict"
        var text = "\(result.name): \(kind) (\(sensitive.rounds) rounds): \(sensitive.verdict.rawValue)"
        if let reason = sensitive.stopReason {
            text += ", stopped for \(reason.rawValue) after \(Terminal.bytes(sensitive.bytesMoved ?? 0))"
        }
        if let direction = sensitive.direction { text += " (\(direction.rawValue))" }
        text += ", \(sensitive.effectText), p \(JSONText.compactNumber(sensitive.pValue))"
        if let note = sensitive.note { text += "; \(note)" }
        if let change = changePointText(sensitive) { text += "\n\(result.name): \(change)" }
        return text.split(separator: "\n").map { Terminal.wrap(String($0)) }.joined(separator: "\n")
    }

    /// The verdict table, coloured on a terminal; 80 columns wide for names of up to 12 characters (names are not cut
    /// below 40: a port test keeps its size class and size, and the table is wider then).
    static func table(_ results: [TestResult], strings: Strings, color: Bool) -> String {
        let rows = results.map { result -> [String] in
            [
                Terminal.truncated(result.name, 40), strings.tableVerdict(result.summary),
                strings.speedCell(result.originalMeanMbps), strings.speedCell(result.controlMeanMbps),
                result.summary.ksPValue < 0 || result.summary.insufficientDataReason != nil
                    ? "-" : shortNumber(result.summary.ksPValue, strings: strings),
                // An adaptive verdict computes no area (-1 then): a dash, as for the KS p-value.
                result.summary.areaTest < 0 && result.summary.ksPValue < 0
                    ? "-" : Terminal.format(result.summary.areaTest, decimals: 2, language: strings.language),
                RunPlan.duration(result.durationSeconds),
            ]
        }
        let text =
            Terminal.table(
                header: [
                    strings.testHeader, strings.verdictHeader, strings.originalHeader, strings.controlHeader,
                    strings.pValueHeader, strings.areaHeader, strings.timeHeader,
                ],
                rows: rows, rightAligned: [2, 3, 4, 5, 6]) + "\n" + Terminal.wrap(strings.tableCaption(zone: nil))
        // The same reason for several tests is said once, with the tests it concerns; the advice once for all.
        let short = results.compactMap { result in
            result.summary.insufficientDataReason.map { (result.name, strings.tooFewMeasurements($0)) }
        }
        let reasons =
            short.isEmpty
            ? []
            : folded(short).map { Terminal.wrap($0) }
                + [Terminal.wrap(strings.tooFewMeasurementsAdvice(tests: short.count))]
        let sensitiveLines = results.compactMap(sensitiveLine)
        let timeLimitLines = folded(results.compactMap { result in result.timeLimitNote.map { (result.name, $0) } })
            .map { Terminal.wrap($0) }
        let notes = reasons + timeLimitLines + sensitiveLines
        let footer = notes.isEmpty ? "" : "\n" + notes.joined(separator: "\n")
        guard color else { return text + footer }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, result) in results.enumerated() where index + 2 < lines.count {
            lines[index + 2] = colorCode(result.verdict) + lines[index + 2] + "\u{1B}[0m"
        }
        return lines.joined(separator: "\n") + footer
    }

    /// Notes of several tests, one line per distinct text, in the order first seen: "Netflix, YouTube: text".
    static func folded(_ notes: [(test: String, text: String)]) -> [String] {
        var order: [String] = []
        var tests: [String: [String]] = [:]
        for note in notes {
            if tests[note.text] == nil { order.append(note.text) }
            tests[note.text, default: []].append(note.test)
        }
        return order.map { text in (tests[text] ?? []).joined(separator: ", ") + ": " + text }
    }

    static func colorCode(_ verdict: Verdict) -> String {
        switch verdict {
        case .differentiation, .blocked: "\u{1B}[31m"
        case .inconclusive: "\u{1B}[33m"
        case .noDifferentiation: "\u{1B}[32m"
        }
    }

    /// p-values: fixed for ordinary sizes, scientific-ish for tiny ones.
    static func shortNumber(_ value: Double, strings: Strings) -> String {
        if value == 0 || value >= 0.001 { return Terminal.format(value, decimals: 3, language: strings.language) }
        return "<" + Terminal.format(0.001, decimals: 3, language: strings.language)
    }
}
