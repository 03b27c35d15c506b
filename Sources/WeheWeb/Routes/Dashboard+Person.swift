import Foundation
import Hummingbird
import WeheCore
import WeheStore

extension Dashboard {
    /// The `before` history-count cursor of the history page.
    func historyCursor(_ info: RequestInfo) throws(WeheWebError) -> Int? {
        guard let text = info.value("before"), !text.isEmpty else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw WeheWebError(.invalidParameter, "'before' must be a non-negative integer")
        }
        return value
    }

    /// The history page of the configured user, `historyPageSize` tests per page.
    func historyHTML(_ info: RequestInfo) async throws -> String {
        let before = try historyCursor(info)
        let strings = info.strings
        let base = configuration.personPath
        let lang = "lang=" + info.language.rawValue
        var content = HistoryContent(
            hasUser: configuration.userID != nil, rows: [], isEmpty: true, olderHref: nil, newestHref: nil,
            runHref: base + "/run?" + lang)
        if let userID = configuration.userID {
            let limit = configuration.historyPageSize
            let overviews = try await configuration.store.history(
                userID: userID, beforeHistoryCount: before, limit: limit + 1)
            let page = overviews.prefix(limit)
            content.rows = page.map { overview in
                let app = names.displayName(ofReplay: overview.metadata.replayName)
                let analysis = overview.analysis
                return HistoryRow(
                    href: testHref(overview.key, info: info),
                    date: info.formatter.dateTime(overview.metadata.startedAt),
                    isoDate: Formatter.isoInstant(overview.metadata.startedAt),
                    app: app, initial: AppNames.initial(of: app), hue: AppNames.hue(of: app) / 30,
                    provider: overview.metadata.provider ?? strings["unknown_provider"],
                    providerKnown: overview.metadata.provider != nil,
                    verdict: VerdictText(summary: analysis, strings: strings),
                    // A replay without samples was not measured (not a speed of 0).
                    original: overview.originalMeanMbps.map { info.formatter.number($0) } ?? strings["not_measured"],
                    control: overview.controlMeanMbps.map { info.formatter.number($0) } ?? strings["not_measured"],
                    bars: MiniBars.comparison(original: overview.originalMeanMbps, control: overview.controlMeanMbps),
                    sensitive: HistoryRow.sensitiveText(overview.sensitive, strings: strings))
            }
            content.isEmpty = content.rows.isEmpty
            if overviews.count > limit, let last = page.last {
                content.olderHref = base + "/?before=\(last.key.historyCount)&" + lang
            }
            if before != nil { content.newestHref = base + "/?" + lang }
        }
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["history_title"], basePath: base, operatorLinks: false, section: .history),
            t: strings.table, page: content)
        return try renderer.render("history", context)
    }

    /// The history as JSON (same paging as the page): one result record per test.
    func historyJSON(_ info: RequestInfo) async throws -> DataBody {
        let before = try historyCursor(info)
        guard let userID = configuration.userID else {
            throw WeheWebError(.notFound, "no user is configured for this dashboard")
        }
        let overviews = try await configuration.store.history(
            userID: userID, beforeHistoryCount: before, limit: configuration.historyPageSize)
        // The result records of `wehe results --json` (`Docs/result.schema.json`).
        let records = overviews.map { overview in
            let replay = overview.metadata.replayName
            return ResultRecord(
                overview: overview, name: names.displayName(ofReplay: replay), test: names.testID(ofReplay: replay))
        }
        return .json(try Self.encode(records))
    }

    /// Loads a test; 404 when absent, and for the person pages only tests of the configured user.
    func loadTest(_ key: TestKey) async throws -> TestRecord {
        if let userID = configuration.userID, userID != key.userID {
            throw WeheWebError(.notFound, "")
        }
        guard let record = try await configuration.store.test(key) else {
            throw WeheWebError(.notFound, "")
        }
        return record
    }

    /// A test page: both throughput series over time, their CDFs, the verdict and its explanation, the numbers.
    func testHTML(_ info: RequestInfo, key: TestKey) async throws -> String {
        let record = try await loadTest(key)
        let strings = info.strings
        let formatter = info.formatter
        let app = names.displayName(ofReplay: record.metadata.replayName)
        let provider = record.metadata.provider ?? strings["unknown_provider"]
        let summary = record.mainAnalysis?.summary
        let original = record.replay(0)?.samples
        let control = record.replay(1)?.samples
        let originalLabel = strings["series_original"] + " (" + app + ")"
        var lineChart = ""
        var cdfChart = ""
        let hasSamples = !(original?.mbps.isEmpty ?? true) || !(control?.mbps.isEmpty ?? true)
        if hasSamples {
            var series: [ChartSeries] = []
            if let original {
                series.append(ChartSeries(label: originalLabel, style: "original", x: original.times, y: original.mbps))
            }
            if let control {
                series.append(
                    ChartSeries(label: strings["series_control"], style: "control", x: control.times, y: control.mbps))
            }
            lineChart = ThroughputChart(
                series: series,
                text: ChartText(
                    title: strings["test_chart_title"], description: strings["test_chart_desc"],
                    xLabel: strings["axis_time"], yLabel: strings["axis_throughput"]),
                formatter: formatter, clipNote: strings["test_chart_clip"]
            ).render(id: "throughput-chart")
            cdfChart =
                DistributionChart(
                    original: original?.mbps ?? [], control: control?.mbps ?? [], originalLabel: originalLabel,
                    controlLabel: strings["series_control"],
                    originalMean: summary?.originalMeanMbps ?? original?.meanMbps,
                    controlMean: summary?.controlMeanMbps ?? control?.meanMbps,
                    text: ChartText(
                        title: strings["test_cdf_title"], description: strings["test_cdf_desc"],
                        xLabel: strings["axis_throughput"], yLabel: strings["axis_fraction"]),
                    gapLabel: strings["test_cdf_gap"], formatter: formatter
                ).render(id: "cdf-chart").svg
        }
        let clip =
            hasSamples
            ? ThroughputChart(
                series: [original, control].compactMap { $0 }.map {
                    ChartSeries(label: "", style: "", x: $0.times, y: $0.mbps)
                },
                text: ChartText(title: "", description: "", xLabel: "", yLabel: ""), formatter: formatter,
                clipNote: ""
            ).clip : nil
        let clipCaption = clip.map {
            strings.format(
                "test_chart_clip_caption",
                [
                    "cut": formatter.number($0.cut, digits: $0.cut == $0.cut.rounded() ? 0 : 1),
                    "count": formatter.integer($0.above),
                    "max": formatter.number($0.maximum),
                ])
        }
        // A replay without any sample was not measured: "not measured", never a 0 that reads as blocked.
        let originalMean = MeasuredMean.value(
            summary?.originalMeanMbps ?? original?.meanMbps, samples: original?.count, verdict: summary?.verdict)
        let controlMean = MeasuredMean.value(
            summary?.controlMeanMbps ?? control?.meanMbps, samples: control?.count, verdict: summary?.verdict)
        let averages =
            originalMean == nil && controlMean == nil
            ? ""
            : AverageBars(
                rows: [
                    AverageBars.Row(label: originalLabel, style: "original", mbps: originalMean),
                    AverageBars.Row(label: strings["series_control"], style: "control", mbps: controlMean),
                ], title: strings["test_bars_title"], formatter: formatter, missing: strings["not_measured"]
            ).render(id: "average-bars")
        var stats: [StatRow] = []
        if let summary {
            stats += [
                StatRow(
                    label: strings["stat_original_mean"],
                    value: originalMean.map { formatter.number($0) + " Mbit/s" } ?? strings["not_measured"]),
                StatRow(
                    label: strings["stat_control_mean"],
                    value: controlMean.map { formatter.number($0) + " Mbit/s" } ?? strings["not_measured"]),
                StatRow(label: strings["stat_area"], value: formatter.percent(summary.areaTest, digits: 1)),
                StatRow(label: strings["stat_ks_d"], value: formatter.number(summary.ksStatistic, digits: 3)),
                StatRow(label: strings["stat_ks_p"], value: formatter.pValue(summary.ksPValue)),
                StatRow(label: strings["stat_ratio"], value: formatter.number(summary.ks2RatioTest)),
                StatRow(
                    label: strings["stat_thresholds"],
                    value: strings.format(
                        "stat_thresholds_value",
                        [
                            "area": formatter.percent(summary.thresholds.area),
                            "p": formatter.pValue(summary.thresholds.ksPValue), "rules": summary.thresholds.ruleSet,
                        ])),
            ]
            if let note = summary.note { stats.append(StatRow(label: strings["stat_note"], value: note)) }
        }
        if let note = record.timeLimitNote {
            // A replay the client stopped at the time limit (the note is English only for now).
            stats.append(StatRow(label: strings["stat_time_limit"], value: note))
        }
        if let sensitive = record.sensitive {
            // The sensitive verdict of an interleaved test, beside the published numbers above (English
            // only for now).
            var value = sensitive.verdict.rawValue
            if let direction = sensitive.direction { value += " (\(direction.rawValue))" }
            value += ", \(sensitive.effectText), p \(formatter.pValue(sensitive.pValue)), \(sensitive.rounds) rounds"
            if let reason = sensitive.stopReason {
                // An adaptive verdict: why it stopped and what its rounds moved.
                let megabytes = Double(sensitive.bytesMoved ?? 0) / 1e6
                value += ", stopped for \(reason.rawValue) after \((megabytes * 10).rounded() / 10) MB"
            }
            if let note = sensitive.note { value += "; \(note)" }
            stats.append(
                StatRow(label: sensitive.stopReason == nil ? "Sensitive verdict" : "Adaptive verdict", value: value))
            if let change = sensitive.changePoint {
                stats.append(StatRow(label: strings["stat_change"], value: Self.changeText(change, strings, formatter)))
            }
        }
        stats.append(
            StatRow(label: strings["stat_samples"], value: "\(original?.count ?? 0) / \(control?.count ?? 0)"))
        if let network = record.metadata.networkType {
            stats.append(StatRow(label: strings["stat_network"], value: network))
        }
        if let server = record.metadata.serverName {
            stats.append(StatRow(label: strings["stat_server"], value: server))
        }
        if let client = record.metadata.clientVersion {
            stats.append(StatRow(label: strings["stat_client"], value: client))
        }
        let title = VerdictText.headline(of: summary, app: app, provider: provider, strings: strings)
        let base = configuration.personPath
        var content = TestContent(
            title: title, ranOn: strings.format("test_ran", ["date": formatter.dateTime(record.metadata.startedAt)]),
            app: app, initial: AppNames.initial(of: app), hue: AppNames.hue(of: app) / 30,
            verdict: VerdictText(summary: summary, strings: strings),
            explanation: VerdictText.explanation(of: summary, app: app, strings: strings, formatter: formatter),
            hasSamples: hasSamples, lineChart: lineChart, cdfChart: cdfChart, clipCaption: clipCaption,
            averages: averages, hasAverages: !averages.isEmpty,
            barsCaption: VerdictText.barsCaption(of: summary, strings: strings), stats: stats,
            backHref: base + "/?lang=" + info.language.rawValue,
            jsonHref: base + "/api/tests/" + RequestInfo.escapePath(key.userID) + "/\(key.historyCount)")
        content.dpi = try await dpiSearches(of: key, info: info)
        content.hasDPI = !content.dpi.isEmpty
        let context = PageContext(
            chrome: Chrome(info: info, title: title, basePath: base, operatorLinks: false, section: .none),
            t: strings.table, page: content)
        return try renderer.render("test", context)
    }

    /// The test page's line for a change in time within the test, in the page's language.
    static func changeText(_ change: ChangePointSummary, _ strings: Strings, _ formatter: Formatter) -> String {
        let p = formatter.pValue(change.pValue)
        let rounds = String(change.rounds)
        guard change.found, let kind = change.kind, let throttled = change.throttledSegment,
            let other = change.otherSegment
        else {
            return strings.format("stat_change_none", ["p": p, "rounds": rounds])
        }
        func effect(_ part: ChangePointSummary.Segment) -> String {
            let faster = part.slowdown < 0
            let sign = faster ? -1.0 : 1.0
            let ends = [sign * part.slowdownLower, sign * part.slowdownUpper].sorted()
            return strings.format(
                faster ? "change_faster" : "change_slowed",
                [
                    "pct": formatter.percent(sign * part.slowdown), "lower": formatter.percent(ends[0]),
                    "upper": formatter.percent(ends[1]),
                ])
        }
        return strings.format(
            kind == .stops ? "stat_change_stops" : "stat_change_starts",
            [
                "mb": formatter.number(change.changeMegabytes, digits: 1),
                "s": formatter.number(change.changeSeconds, digits: 2), "throttled": effect(throttled),
                "other": effect(other), "p": p, "rounds": rounds,
            ])
    }

    /// A test in full as JSON: its result record with both sample series.
    func testJSON(key: TestKey) async throws -> DataBody {
        let record = try await loadTest(key)
        // The result record with both sample series, as `wehe results show --json` prints it.
        let replay = record.metadata.replayName
        let full = ResultRecord(
            record: record, name: names.displayName(ofReplay: replay), test: names.testID(ofReplay: replay))
        return .json(try Self.encode(full), filename: "wehe-test-\(key.historyCount).json")
    }

    /// JSON text of a value (sorted keys, ISO dates).
    static func encode(_ value: some Encodable) throws(WeheWebError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw WeheWebError(.computationFailed, "the data could not be encoded", underlying: error)
        }
    }
}
