import WeheClient
import WeheCore
import WeheWire

/// The `--json` object of one test and the verdict table.
enum ResultOutput {
    /// One JSON object per test: at least `test`, `verdict`, `originalMeanMbps`, `controlMeanMbps`, `ksPValue`,
    /// `area`, `durationSeconds`, `bytes`.
    static func json(_ result: TestResult) -> String {
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        var members: [(String, JSONValue)] = [
            ("test", .string(result.test)),
            ("name", .string(result.name)),
            ("verdict", .string(result.verdict.rawValue)),
            ("direction", result.direction.map { .string($0.rawValue) } ?? .null),
            ("originalMeanMbps", number(result.summary.originalMeanMbps)),
            ("controlMeanMbps", number(result.summary.controlMeanMbps)),
            ("ksPValue", number(result.summary.ksPValue)),
            ("area", number(result.summary.areaTest)),
            ("ks2Ratio", number(result.summary.ks2RatioTest)),
            ("areaThreshold", number(result.summary.thresholds.area)),
            ("ksPValueThreshold", number(result.summary.thresholds.ksPValue)),
            ("durationSeconds", number(result.durationSeconds)),
            ("bytes", .number(Double(result.bytesReceived), text: String(result.bytesReceived))),
            ("historyCount", .number(Double(result.historyCount), text: String(result.historyCount))),
            ("confirmed", .bool(result.confirmed)),
            // The network: the AS of the public address (server's or own table), the provider, the link kind.
            ("asNumber", result.network.asNumber.map { .number(Double($0), text: String($0)) } ?? .null),
            ("asName", result.network.asName.map(JSONValue.string) ?? .null),
            ("asSource", result.network.asSource.map { .string($0.rawValue) } ?? .null),
            ("provider", result.network.displayName.map(JSONValue.string) ?? .null),
            ("linkKind", .string(result.network.linkKind.rawValue)),
        ]
        if let first = result.firstVerdict { members.append(("firstVerdict", .string(first.rawValue))) }
        members.append(("reason", result.summary.insufficientDataReason.map(JSONValue.string) ?? .null))
        members.append(("note", result.summary.note.map(JSONValue.string) ?? .null))
        // Replays stopped by the time limit, and what the verdicts then judged (only the part they covered).
        members.append(
            (
                "replaysCutShort",
                .array(result.replaysCutShort.map { .string($0 == .original ? "original" : "control") })
            ))
        members.append(("timeLimitNote", result.timeLimitNote.map(JSONValue.string) ?? .null))
        // Which verdict `verdict` is: the published test's, or the adaptive one (whose KS and area are not computed).
        let method =
            result.sensitive?.stopReason != nil ? "adaptive" : result.sensitive != nil ? "interleaved" : "published"
        members.append(("method", .string(method)))
        members += sensitiveMembers(result.sensitiveSummary)
        return JSONValue.object(members).serialized()
    }

    /// The sensitive verdict's members (interleaved tests): `sensitiveVerdict` takes the values of `verdict`.
    static func sensitiveMembers(_ sensitive: SensitiveSummary) -> [(String, JSONValue)] {
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        return [
            ("sensitiveVerdict", .string(sensitive.verdict.rawValue)),
            ("sensitiveDirection", sensitive.direction.map { .string($0.rawValue) } ?? .null),
            ("sensitivePValue", number(sensitive.pValue)),
            ("sensitiveAlpha", number(sensitive.alpha)),
            ("sensitiveRounds", .number(Double(sensitive.rounds), text: String(sensitive.rounds))),
            ("slowdown", number(sensitive.slowdown)),
            ("slowdownLower", number(sensitive.slowdownLower)),
            ("slowdownUpper", number(sensitive.slowdownUpper)),
            ("sensitiveEffect", .string(sensitive.effectText)),
            ("sensitiveDurationSeconds", sensitive.durationSeconds.map(number) ?? .null),
            (
                // Every byte of the rounds both ways when measured (adaptive), else the bytes received.
                "sensitiveBytes",
                (sensitive.bytesMoved ?? sensitive.bytesReceived).map { .number(Double($0), text: String($0)) } ?? .null
            ),
            ("stopReason", sensitive.stopReason.map { .string($0.rawValue) } ?? .null),
            ("sensitiveNote", sensitive.note.map(JSONValue.string) ?? .null),
            ("changePoint", sensitive.changePoint.map(changePointJSON) ?? .null),
        ]
    }

    /// The change in time within the test (interleaved rounds): `found`, `kind` ("starts"/"stops"), `pValue`, `alpha`,
    /// `rounds`, `bins`, `changeMegabytes`, `changeSeconds`, `totalMegabytes`, `effect`, `note`, and `before` /
    /// `after` parts (`startMegabytes`, `endMegabytes`, `originalSeconds`, `verdict`, `direction`, `pValue`,
    /// `slowdown`, `slowdownLower`, `slowdownUpper`, `effect`).
    static func changePointJSON(_ change: ChangePointSummary) -> JSONValue {
        func number(_ value: Double) -> JSONValue {
            value.isFinite ? .number(value, text: JSONText.compactNumber(value)) : .null
        }
        func integer(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        func part(_ segment: ChangePointSummary.Segment?) -> JSONValue {
            guard let segment else { return .null }
            return .object([
                ("startMegabytes", number(segment.startMegabytes)), ("endMegabytes", number(segment.endMegabytes)),
                ("originalSeconds", number(segment.originalSeconds)), ("verdict", .string(segment.verdict.rawValue)),
                ("direction", segment.direction.map { .string($0.rawValue) } ?? .null),
                ("pValue", number(segment.pValue)), ("slowdown", number(segment.slowdown)),
                ("slowdownLower", number(segment.slowdownLower)), ("slowdownUpper", number(segment.slowdownUpper)),
                ("effect", .string(segment.effectText)),
            ])
        }
        return .object([
            ("found", .bool(change.found)), ("kind", change.kind.map { .string($0.rawValue) } ?? .null),
            ("pValue", number(change.pValue)), ("alpha", number(change.alpha)), ("rounds", integer(change.rounds)),
            ("bins", integer(change.bins)), ("changeMegabytes", number(change.changeMegabytes)),
            ("changeSeconds", number(change.changeSeconds)), ("totalMegabytes", number(change.totalMegabytes)),
            ("effect", change.effectText.map(JSONValue.string) ?? .null),
            ("note", change.note.map(JSONValue.string) ?? .null), ("before", part(change.before)),
            ("after", part(change.after)),
        ])
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

    /// The verdict table, coloured on a terminal; 80 columns wide for names of up to 12 characters.
    static func table(_ results: [TestResult], strings: Strings, color: Bool) -> String {
        let rows = results.map { result -> [String] in
            [
                Terminal.truncated(result.name, 12), strings.tableVerdict(result.summary),
                Terminal.format(result.summary.originalMeanMbps, decimals: 1, language: strings.language),
                Terminal.format(result.summary.controlMeanMbps, decimals: 1, language: strings.language),
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
        let reasons = results.compactMap { result in
            result.summary.insufficientDataReason.map {
                Terminal.wrap("\(result.name): " + strings.tooFewMeasurements($0))
            }
        }
        let sensitiveLines = results.compactMap(sensitiveLine)
        let timeLimitLines = results.compactMap { result in
            result.timeLimitNote.map { Terminal.wrap("\(result.name): \($0)") }
        }
        let notes = reasons + timeLimitLines + sensitiveLines
        let footer = notes.isEmpty ? "" : "\n" + notes.joined(separator: "\n")
        guard color else { return text + footer }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, result) in results.enumerated() where index + 2 < lines.count {
            lines[index + 2] = colorCode(result.verdict) + lines[index + 2] + "\u{1B}[0m"
        }
        return lines.joined(separator: "\n") + footer
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
