package import Foundation
package import WeheCore

/// One test's result as every JSON output gives it: `wehe run --json`, `wehe results --json`, `wehe results show
/// --json`, `wehe results export` (JSON and the CSV's columns) and the dashboard's `/api/history` and `/api/tests`.
/// `fields` is the only place that names the keys, so the outputs cannot drift apart; `Docs/result.schema.json`
/// describes the record and the tests validate each output against it.
package struct ResultRecord: Sendable, Encodable {
    /// The record's format; raised when a key changes meaning or disappears (a new optional key does not raise it).
    package static let schemaVersion = 1

    /// The history count: the id `wehe results show` takes.
    package var historyCount: Int
    /// When the test started.
    package var date: Date
    /// The catalog id (`netflix`, `port853s`), when known.
    package var test: String?
    /// The app's name as people read it (`Netflix`), else the replay name.
    package var name: String
    /// The original replay's name (`Netflix-06072024`).
    package var replay: String
    /// The control replay's name, when known (`wehe run`, and a test read in full; lists do not keep it).
    package var controlReplay: String?
    /// The replay server that ran it.
    package var server: String?
    /// The provider (`Name (AS64500)`), the AS, where the AS came from (`server` or `local`), the link kind.
    package var provider: String?
    package var asNumber: Int?
    package var asName: String?
    package var asSource: String?
    package var linkKind: String?
    /// Our version that ran it.
    package var clientVersion: String?
    /// `true` for a run started by the monitor's schedule; `nil` (key left out) for one a person started.
    package var scheduled: Bool?
    /// The published verdict and its numbers; `nil` before the analysis is stored.
    package var analysis: AnalysisSummary?
    /// The replays' mean throughputs, Mbit/s, when measured (else the analysis's).
    package var originalMeanMbps: Double?
    package var controlMeanMbps: Double?
    /// The first run's verdict when a confirmation run replaced it.
    package var firstVerdict: Verdict?
    /// Whether a confirmation run produced the verdict; `nil` when not recorded (the history does not keep it).
    package var confirmed: Bool?
    /// Wall time of the whole test and bytes received, when known (`wehe run`).
    package var durationSeconds: Double?
    package var bytes: Int?
    /// The replays the time limit stopped (`original`, `control`), and what the verdicts then judged.
    package var replaysCutShort: [String]
    package var timeLimitNote: String?
    /// The sensitive (interleaved) or adaptive verdict beside the published one.
    package var sensitive: SensitiveSummary?
    /// What the `sensitive…` members show when different from `sensitive`: `wehe run` shows its one-round summary
    /// for a published test too (the `method` still says `published`).
    package var sensitiveShown: SensitiveSummary?
    /// Both sample series (`results show --json`, the dashboard's test); `nil` in lists.
    package var replays: [Series]?

    /// One replay's samples.
    package struct Series: Sendable, Hashable {
        package var testID: Int
        package var replay: String
        package var mbps: [Double]
        package var times: [Double]
        package var reachedTimeLimit: Bool?

        package init(testID: Int, replay: String, mbps: [Double], times: [Double], reachedTimeLimit: Bool?) {
            self.testID = testID
            self.replay = replay
            self.mbps = mbps
            self.times = times
            self.reachedTimeLimit = reachedTimeLimit
        }
    }

    /// A member's value, kept in order for JSON text and CSV columns.
    package indirect enum Value: Sendable, Encodable {
        case null
        case bool(Bool)
        case integer(Int)
        /// A non-finite number is written as `null` (JSON has none).
        case number(Double)
        case string(String)
        case array([Value])
        case object([(String, Value)])

        package func encode(to encoder: any Encoder) throws {
            switch self {
            case .object(let members):
                var container = encoder.container(keyedBy: Key.self)
                for (key, value) in members { try container.encode(value, forKey: Key(key)) }
            case .array(let values):
                var container = encoder.unkeyedContainer()
                for value in values { try container.encode(value) }
            default:
                var container = encoder.singleValueContainer()
                switch self {
                case .null: try container.encodeNil()
                case .bool(let value): try container.encode(value)
                case .integer(let value): try container.encode(value)
                case .number(let value): value.isFinite ? try container.encode(value) : try container.encodeNil()
                case .string(let value): try container.encode(value)
                case .array, .object: break
                }
            }
        }
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ text: String) { stringValue = text }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// A record from the history, with the catalog's names when known.
    package init(overview row: TestOverview, name: String?, test: String? = nil) {
        historyCount = row.key.historyCount
        date = row.metadata.startedAt
        self.test = test
        self.name = name ?? row.metadata.replayName
        replay = row.metadata.replayName
        server = row.metadata.serverName
        provider = row.metadata.provider
        asNumber = row.metadata.asNumber
        asName = row.metadata.asName
        scheduled = row.metadata.scheduled == true ? true : nil
        linkKind = row.metadata.networkType
        clientVersion = row.metadata.clientVersion
        analysis = row.analysis
        // The analysis's means (the server's, without the last partial sample) for a replay that was measured;
        // `null` for one that was not (no sample stored), so that it is not read as a measured 0. A blocked port
        // keeps its 0: there, 0 is what was found.
        let blocked = row.analysis?.verdict == .blocked
        originalMeanMbps =
            row.originalMeanMbps == nil && !blocked ? nil : row.analysis?.originalMeanMbps ?? row.originalMeanMbps
        controlMeanMbps =
            row.controlMeanMbps == nil && !blocked ? nil : row.analysis?.controlMeanMbps ?? row.controlMeanMbps
        replaysCutShort = []
        sensitive = row.sensitive
    }

    /// A record of a test in full (with its sample series and which replays the time limit stopped).
    package init(record: TestRecord, name: String?, test: String? = nil) {
        self.init(
            overview: TestOverview(
                key: record.key, metadata: record.metadata, originalMeanMbps: record.replay(0)?.samples.meanMbps,
                controlMeanMbps: record.replay(1)?.samples.meanMbps, analysis: record.mainAnalysis?.summary,
                sensitive: record.sensitive),
            name: name, test: test)
        controlReplay = record.replay(1)?.replayName
        replaysCutShort = record.replays.filter { $0.reachedTimeLimit == true }.map {
            $0.key.testID == 0 ? "original" : "control"
        }
        timeLimitNote = record.timeLimitNote
        replays = record.replays.map {
            Series(
                testID: $0.key.testID, replay: $0.replayName, mbps: $0.samples.mbps, times: $0.samples.times,
                reachedTimeLimit: $0.reachedTimeLimit)
        }
    }

    /// A bare record, for `wehe run` (which fills in what it measured).
    package init(historyCount: Int, date: Date, test: String?, name: String, replay: String) {
        self.historyCount = historyCount
        self.date = date
        self.test = test
        self.name = name
        self.replay = replay
        replaysCutShort = []
    }

    /// Which verdict `verdict` is: the published test's, or one from interleaved rounds (sensitive) or the adaptive
    /// test (whose KS test and area are not computed).
    package var method: String {
        sensitive?.stopReason != nil ? "adaptive" : sensitive != nil ? "interleaved" : "published"
    }

    /// ISO 8601 with the local offset ("2026-11-24T15:02:11+01:00", "…Z" in UTC).
    package static func isoDate(_ date: Date, zone: TimeZone = .current) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = zone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// Every member in order: the keys of `Docs/result.schema.json`. `id` repeats `historyCount` and `app` repeats
    /// `name` (the names `wehe results` had, kept for spreadsheets and scripts that read them).
    package var fields: [(String, Value)] {
        func integer(_ value: Int?) -> Value { value.map(Value.integer) ?? .null }
        func number(_ value: Double?) -> Value { value.map(Value.number) ?? .null }
        func text(_ value: String?) -> Value { value.map(Value.string) ?? .null }
        let summary = analysis
        var members: [(String, Value)] = [
            ("schemaVersion", .integer(Self.schemaVersion)), ("kind", .string("test")),
            ("historyCount", .integer(historyCount)), ("id", .integer(historyCount)),
            ("date", .string(Self.isoDate(date))), ("test", text(test)), ("name", .string(name)),
            ("app", .string(name)), ("replay", .string(replay)), ("controlReplay", text(controlReplay)),
            ("server", text(server)), ("provider", text(provider)), ("asNumber", integer(asNumber)),
            ("asName", text(asName)), ("asSource", text(asSource)), ("linkKind", text(linkKind)),
            ("clientVersion", text(clientVersion)),
        ]
        if let scheduled { members.append(("scheduled", .bool(scheduled))) }
        members += [
            ("verdict", text(summary?.verdict.rawValue)), ("direction", text(summary?.direction?.rawValue)),
            ("firstVerdict", text(firstVerdict?.rawValue)), ("confirmed", confirmed.map(Value.bool) ?? .null),
            ("originalMeanMbps", number(originalMeanMbps)), ("controlMeanMbps", number(controlMeanMbps)),
            ("ksPValue", number(summary?.ksPValue)), ("ksStatistic", number(summary?.ksStatistic)),
            ("area", number(summary?.areaTest)), ("ks2Ratio", number(summary?.ks2RatioTest)),
            ("areaThreshold", number(summary?.thresholds.area)),
            ("ksPValueThreshold", number(summary?.thresholds.ksPValue)),
            ("ruleSet", text(summary?.thresholds.ruleSet)), ("reason", text(summary?.insufficientDataReason)),
            ("note", text(summary?.note)), ("durationSeconds", number(durationSeconds)), ("bytes", integer(bytes)),
            ("replaysCutShort", .array(replaysCutShort.map(Value.string))), ("timeLimitNote", text(timeLimitNote)),
            ("method", .string(method)),
        ]
        members += Self.sensitiveFields(sensitiveShown ?? sensitive)
        if let replays {
            members.append(
                (
                    "replays",
                    .array(
                        replays.map {
                            .object([
                                ("testID", .integer($0.testID)), ("replay", .string($0.replay)),
                                ("mbps", .array($0.mbps.map(Value.number))),
                                ("times", .array($0.times.map(Value.number))),
                                ("reachedTimeLimit", $0.reachedTimeLimit.map(Value.bool) ?? .null),
                            ])
                        })
                ))
        }
        return members
    }

    /// The sensitive verdict's members (all `null` without one): `sensitiveVerdict` takes the values of `verdict`.
    package static func sensitiveFields(_ sensitive: SensitiveSummary?) -> [(String, Value)] {
        func number(_ value: Double?) -> Value { value.map(Value.number) ?? .null }
        func text(_ value: String?) -> Value { value.map(Value.string) ?? .null }
        return [
            ("sensitiveVerdict", text(sensitive?.verdict.rawValue)),
            ("sensitiveDirection", text(sensitive?.direction?.rawValue)),
            ("sensitivePValue", number(sensitive?.pValue)), ("sensitiveAlpha", number(sensitive?.alpha)),
            ("sensitiveRounds", sensitive.map { .integer($0.rounds) } ?? .null),
            ("slowdown", number(sensitive?.slowdown)), ("slowdownLower", number(sensitive?.slowdownLower)),
            ("slowdownUpper", number(sensitive?.slowdownUpper)), ("sensitiveEffect", text(sensitive?.effectText)),
            ("sensitiveDurationSeconds", number(sensitive?.durationSeconds)),
            // Every byte of the rounds both ways when measured (adaptive), else the bytes received.
            ("sensitiveBytes", (sensitive?.bytesMoved ?? sensitive?.bytesReceived).map(Value.integer) ?? .null),
            ("stopReason", text(sensitive?.stopReason?.rawValue)), ("sensitiveNote", text(sensitive?.note)),
            ("changePoint", sensitive?.changePoint.map(changePointValue) ?? .null),
        ]
    }

    /// The change in time within the test (interleaved rounds), with the parts before and after it.
    package static func changePointValue(_ change: ChangePointSummary) -> Value {
        func part(_ segment: ChangePointSummary.Segment?) -> Value {
            guard let segment else { return .null }
            return .object([
                ("startMegabytes", .number(segment.startMegabytes)), ("endMegabytes", .number(segment.endMegabytes)),
                ("originalSeconds", .number(segment.originalSeconds)), ("verdict", .string(segment.verdict.rawValue)),
                ("direction", segment.direction.map { .string($0.rawValue) } ?? .null),
                ("pValue", .number(segment.pValue)), ("slowdown", .number(segment.slowdown)),
                ("slowdownLower", .number(segment.slowdownLower)), ("slowdownUpper", .number(segment.slowdownUpper)),
                ("effect", .string(segment.effectText)),
            ])
        }
        return .object([
            ("found", .bool(change.found)), ("kind", change.kind.map { .string($0.rawValue) } ?? .null),
            ("pValue", .number(change.pValue)), ("alpha", .number(change.alpha)), ("rounds", .integer(change.rounds)),
            ("bins", .integer(change.bins)), ("changeMegabytes", .number(change.changeMegabytes)),
            ("changeSeconds", .number(change.changeSeconds)), ("totalMegabytes", .number(change.totalMegabytes)),
            ("effect", change.effectText.map(Value.string) ?? .null),
            ("note", change.note.map(Value.string) ?? .null), ("before", part(change.before)),
            ("after", part(change.after)),
        ])
    }

    package func encode(to encoder: any Encoder) throws { try Value.object(fields).encode(to: encoder) }
}
