import Foundation
import Hummingbird
import WeheAnalysis
import WeheCore
import WeheStatistics
import WeheStore

extension Dashboard {
    func filterForm(_ filter: OperatorFilter, overview: OperatorOverview?, info: RequestInfo, action: String)
        -> FilterForm
    {
        let providers = Set((overview?.availableProviders ?? []) + filter.providers).sorted()
        let apps = Set((overview?.availableApps ?? []) + filter.apps).sorted {
            names.displayName(ofReplay: $0).lowercased() < names.displayName(ofReplay: $1).lowercased()
        }
        return FilterForm(
            action: action, from: filter.fromDay, to: filter.toDay,
            providers: providers.map { FilterOption(value: $0, label: $0, selected: filter.providers.contains($0)) },
            apps: apps.map {
                FilterOption(value: $0, label: names.displayName(ofReplay: $0), selected: filter.apps.contains($0))
            },
            lang: info.language.rawValue, resetHref: action + "?lang=" + info.language.rawValue)
    }

    func operatorLink(
        _ path: String, filter: OperatorFilter, info: RequestInfo, extra: [(name: String, value: String)] = []
    )
        -> String
    {
        configuration.operatorPath + path + "?"
            + RequestInfo.encodeQuery(filter.queryItems + extra + [("lang", info.language.rawValue)])
    }

    func breakdownRows(_ items: [OperatorOverview.Breakdown], info: RequestInfo) -> [BreakdownRow] {
        let f = info.formatter
        return items.map { item in
            BreakdownRow(
                name: item.displayName, tests: f.integer(item.tests), differentiation: f.integer(item.differentiation),
                inconclusive: f.integer(item.inconclusive), none: f.integer(item.noDifferentiation),
                blocked: f.integer(item.blocked), notAnalysed: f.integer(item.notAnalysed),
                share: f.percent(item.tests > 0 ? Double(item.differentiation) / Double(item.tests) : 0),
                bar: MiniBars.stacked(
                    [item.differentiation, item.inconclusive, item.noDifferentiation, item.blocked, item.notAnalysed],
                    styles: ["diff", "inconclusive", "none", "blocked", "pending"]))
        }
    }

    /// The operator overview page.
    func operatorHTML(_ info: RequestInfo) async throws -> String {
        let filter = try operatorFilter(info)
        let strings = info.strings
        let f = info.formatter
        let data = try await overview(filter, strings: strings)
        let base = configuration.operatorPath
        let csv = { (table: String) in
            Downloads(csv: self.operatorLink("/data.csv", filter: filter, info: info, extra: [("table", table)]))
        }
        let bars = data.perDay.compactMap { day -> DailyBarChart.Bar? in
            guard let date = Formatter(language: .english, timeZone: .gmt).parseDay(day.day) else { return nil }
            return DailyBarChart.Bar(day: date, count: day.tests)
        }
        let chart = DailyBarChart(
            bars: bars,
            text: ChartText(
                title: strings["section_per_day"], description: strings["operator_intro"], xLabel: strings["axis_day"],
                yLabel: strings["col_tests"]),
            barLabel: strings["per_day_bar"], formatter: Formatter(language: info.language, timeZone: .gmt)
        ).render(id: "per-day-chart")
        // The matrix shows the busiest providers and apps; the CSV holds every cell.
        let matrixProviders = Array(data.perProvider.prefix(25))
        let matrixApps = Array(data.perApp.prefix(25))
        let cellIndex = Dictionary(
            data.matrix.map { ($0.provider + "\u{0}" + $0.app, $0) }, uniquingKeysWith: { a, _ in a })
        let matrixRows = matrixProviders.map { provider in
            MatrixRow(
                provider: provider.displayName,
                cells: matrixApps.map { app in
                    guard let cell = cellIndex[provider.name + "\u{0}" + app.name], cell.tests > 0 else {
                        return MatrixCellView(text: "–", share: "", label: "", shade: 0, empty: true)
                    }
                    let share = Double(cell.differentiation) / Double(cell.tests)
                    return MatrixCellView(
                        text: f.integer(cell.tests), share: f.percent(share),
                        label: strings.format(
                            "matrix_cell", ["count": f.integer(cell.tests), "share": f.percent(share)]),
                        shade: share == 0 ? 0 : min(4, 1 + Int(share * 4)), empty: false)
                })
        }
        var findings: FindingsTable?
        if let entry = await self.findings.entry(
            for: filter, now: configuration.now(), maximumAge: configuration.crowdCacheSeconds)
        {
            findings = findingsTable(.computed(entry), filter: filter, info: info)
        }
        let localizationRows = (data.localizations ?? []).map { run in
            LocalizationRow(
                requested: f.dateTime(run.requestedAt), app: names.displayName(ofReplay: run.replay),
                servers: run.servers.joined(separator: " · "),
                verdict: run.verdict.map { strings["localization_" + $0.rawValue] } ?? strings["localization_pending"],
                verdictStyle: run.verdict == .accessNetwork
                    ? "diff" : (run.verdict == .noEvidence ? "none" : "inconclusive"),
                pValue: run.sumTestPValue.map(f.pValue) ?? "–",
                loss: run.averageLoss.map { f.percent($0, digits: 1) }.joined(separator: " / "))
        }
        // What is not OK, worst first: the drill-down behind the health badge at the top of the page.
        let attention = data.health.items.filter { $0.status != .ok }.sorted { $0.status > $1.status }.map {
            HealthRow(
                name: $0.name, value: $0.value, status: $0.status.rawValue,
                statusLabel: strings["health_" + $0.status.rawValue], symbol: Self.healthSymbol($0.status))
        }
        let content = OperatorContent(
            filter: filterForm(filter, overview: data, info: info, action: base + "/"),
            cards: [
                SummaryCard(label: strings["summary_tests"], value: f.integer(data.totalTests)),
                SummaryCard(
                    label: strings["summary_differentiation"],
                    value: f.integer(data.differentiationTests) + " ("
                        + f.percent(
                            data.totalTests > 0 ? Double(data.differentiationTests) / Double(data.totalTests) : 0)
                        + ")"),
                SummaryCard(label: strings["summary_providers"], value: f.integer(data.perProvider.count)),
                SummaryCard(label: strings["summary_apps"], value: f.integer(data.perApp.count)),
            ],
            dayChart: chart, dayDownloads: csv("days"),
            perApp: breakdownRows(data.perApp, info: info), appDownloads: csv("apps"),
            perProvider: breakdownRows(data.perProvider, info: info), providerDownloads: csv("providers"),
            matrixApps: matrixApps.map(\.displayName), matrixRows: matrixRows, matrixEmpty: matrixRows.isEmpty,
            matrixDownloads: csv("matrix"), findings: findings,
            findingsHref: operatorLink("/findings", filter: filter, info: info),
            localizationsAvailable: data.localizations != nil, localizations: localizationRows,
            localizationsEmpty: localizationRows.isEmpty, weheyDownloads: csv("wehey"),
            healthStatus: data.health.status.rawValue, healthLabel: strings["health_" + data.health.status.rawValue],
            healthSymbol: Self.healthSymbol(data.health.status),
            health: data.health.items.map {
                HealthRow(
                    name: $0.name, value: $0.value, status: $0.status.rawValue,
                    statusLabel: strings["health_" + $0.status.rawValue], symbol: Self.healthSymbol($0.status))
            },
            healthStarted: data.health.startedAt.map(f.dateTime), healthDownloads: csv("health"),
            attention: attention, hasAttention: !attention.isEmpty,
            attentionSummary: strings.format(
                "health_attention",
                ["count": f.integer(attention.count), "total": f.integer(data.health.items.count)]),
            refreshNote: strings.format("operator_refresh", ["seconds": String(Self.operatorRefreshSeconds)]),
            jsonHref: operatorLink("/data.json", filter: filter, info: info))
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["operator_title"], basePath: base, operatorLinks: true,
                section: .operatorOverview, autoRefreshSeconds: Self.operatorRefreshSeconds),
            t: strings.table, page: content)
        return try renderer.render("operator", context)
    }

    /// How often the operator overview reloads itself (a meta refresh: no script needed).
    static let operatorRefreshSeconds = 60

    static func healthSymbol(_ status: HealthStatus) -> String {
        switch status {
        case .ok: "✓"
        case .degraded: "!"
        case .down: "✕"
        }
    }

    /// The overview as JSON.
    func operatorJSON(_ info: RequestInfo) async throws -> DataBody {
        let filter = try operatorFilter(info)
        let data = try await overview(filter, strings: info.strings)
        return .json(try Self.encode(data), filename: "wehe-operator-\(filter.fromDay)-\(filter.toDay).json")
    }

    /// One table of the overview as CSV (`table` = days, apps, providers, matrix, wehey or health).
    func operatorCSV(_ info: RequestInfo) async throws -> DataBody {
        let filter = try operatorFilter(info)
        let tables = ["days", "apps", "providers", "matrix", "wehey", "health"]
        guard let table = info.value("table"), tables.contains(table) else {
            throw WeheWebError(.invalidParameter, "'table' must be one of " + tables.joined(separator: ", "))
        }
        let data = try await overview(filter, strings: info.strings)
        var csv: CSVTable
        switch table {
        case "days":
            csv = CSVTable(header: ["day", "tests"], rows: data.perDay.map { [.text($0.day), .integer($0.tests)] })
        case "apps", "providers":
            csv = CSVTable(header: [
                table == "apps" ? "replay" : "provider", "name", "tests", "differentiation", "inconclusive",
                "no_differentiation", "blocked", "not_analysed",
            ])
            csv.rows = (table == "apps" ? data.perApp : data.perProvider).map {
                [
                    .text($0.name), .text($0.displayName), .integer($0.tests), .integer($0.differentiation),
                    .integer($0.inconclusive), .integer($0.noDifferentiation), .integer($0.blocked),
                    .integer($0.notAnalysed),
                ]
            }
        case "matrix":
            csv = CSVTable(
                header: ["provider", "replay", "tests", "differentiation"],
                rows: data.matrix.map {
                    [.text($0.provider), .text($0.app), .integer($0.tests), .integer($0.differentiation)]
                })
        case "wehey":
            csv = CSVTable(
                header: ["requested_at", "replay", "servers", "verdict", "sum_test_p_value", "average_loss"],
                rows: (data.localizations ?? []).map {
                    [
                        .text(Formatter.isoInstant($0.requestedAt)), .text($0.replay),
                        .text($0.servers.joined(separator: " ")),
                        .text($0.verdict?.rawValue ?? "pending"), .number($0.sumTestPValue),
                        .text($0.averageLoss.map { String($0) }.joined(separator: " ")),
                    ]
                })
        default:
            csv = CSVTable(
                header: ["name", "value", "status"],
                rows: data.health.items.map { [.text($0.name), .text($0.value), .text($0.status.rawValue)] })
        }
        return .csv(csv.rendered, filename: "wehe-\(table)-\(filter.fromDay)-\(filter.toDay).csv")
    }

    /// The outcome of a findings request.
    enum FindingsOutcome {
        case computed(CrowdFindingsCache.Entry)
        case tooMany(Int)
    }

    /// Runs (or reuses) the crowd-sourced analysis over the selection, one (provider, app) group at a time.
    func computeFindings(_ filter: OperatorFilter) async throws -> FindingsOutcome {
        let now = configuration.now()
        if let entry = await findings.entry(for: filter, now: now, maximumAge: configuration.crowdCacheSeconds) {
            return .computed(entry)
        }
        let store = configuration.store
        let groups = try await store.counts(
            CountQuery(
                groupBy: [.provider, .replay], from: filter.from, to: filter.to,
                providers: filter.providers.isEmpty ? nil : filter.providers,
                replays: filter.apps.isEmpty ? nil : filter.apps)
        ).filter { $0.provider != nil && $0.replayName != nil }
        let total = groups.reduce(0) { $0 + $1.count }
        guard total <= configuration.crowdTestLimit else { return .tooMany(total) }
        var analyzer: CrowdAnalyzer<SeededGenerator>
        do {
            analyzer = try CrowdAnalyzer(configuration: configuration.crowd, seed: configuration.crowdSeed)
        } catch {
            throw WeheWebError(.computationFailed, "the crowd analysis is misconfigured", underlying: error)
        }
        for group in groups {
            guard let provider = group.provider, let replay = group.replayName else { continue }
            let query = CrowdQuery(provider: provider, replayName: replay, from: filter.from, to: filter.to)
            for try await record in store.crowdTests(query) {
                try Task.checkCancellation()
                analyzer.add(
                    WeheAnalysis.CrowdTestRecord(
                        provider: provider, replay: replay,
                        measurement: .samples(original: record.original.mbps, control: record.control.mbps)))
            }
        }
        let reports: [CrowdGroupReport]
        do {
            reports = try analyzer.finish()
        } catch {
            throw WeheWebError(.computationFailed, "the crowd analysis failed", underlying: error)
        }
        let entry = CrowdFindingsCache.Entry(computedAt: now, tests: total, reports: reports)
        await findings.store(entry, for: filter)
        return .computed(entry)
    }

    func findingsTable(_ outcome: FindingsOutcome, filter: OperatorFilter, info: RequestInfo) -> FindingsTable {
        let f = info.formatter
        let strings = info.strings
        let csvHref = operatorLink("/findings.csv", filter: filter, info: info)
        let jsonHref = operatorLink("/findings.json", filter: filter, info: info)
        switch outcome {
        case .tooMany(let count):
            return FindingsTable(
                rows: [], isEmpty: true, computedAt: "",
                tooMany: strings.format(
                    "findings_too_many", ["count": f.integer(count), "limit": f.integer(configuration.crowdTestLimit)]),
                csvHref: csvHref, jsonHref: jsonHref)
        case .computed(let entry):
            let rows = entry.reports.sorted {
                ($0.rates.isEmpty ? 1 : 0, -$0.totalTests) < ($1.rates.isEmpty ? 1 : 0, -$1.totalTests)
            }
            .map { report in
                FindingRow(
                    provider: report.provider, app: names.displayName(ofReplay: report.replay),
                    tests: f.integer(report.totalTests), positive: f.integer(report.positiveTests),
                    rates: report.rates.map {
                        strings.format(
                            "rate_range",
                            ["rate": f.number($0.rate), "lower": f.number($0.lower), "upper": f.number($0.upper)])
                    }.joined(separator: "; "),
                    hasRates: !report.rates.isEmpty, truePositives: f.integer(report.truePositives),
                    note: report.note ?? "")
            }
            return FindingsTable(
                rows: rows, isEmpty: !entry.reports.contains { !$0.rates.isEmpty },
                computedAt: strings.format("findings_cached", ["time": f.dateTime(entry.computedAt)]), tooMany: nil,
                csvHref: csvHref, jsonHref: jsonHref)
        }
    }

    /// The findings page: computes the crowd analysis for the selection (or reuses a recent result).
    func findingsHTML(_ info: RequestInfo) async throws -> String {
        let filter = try operatorFilter(info)
        let strings = info.strings
        let base = configuration.operatorPath
        let providers = try await configuration.store.counts(
            CountQuery(groupBy: [.provider, .replay], from: filter.from, to: filter.to))
        let options = OperatorOverview(
            from: filter.fromDay, to: filter.toDay, providers: [], apps: [], totalTests: 0, differentiationTests: 0,
            perDay: [], perApp: [], perProvider: [], matrix: [],
            availableProviders: Array(Set(providers.compactMap(\.provider))).sorted(),
            availableApps: Array(Set(providers.compactMap(\.replayName))).sorted(), localizations: nil,
            health: .init(status: .ok, startedAt: nil, items: []))
        let outcome = try await computeFindings(filter)
        let content = FindingsContent(
            filter: filterForm(filter, overview: options, info: info, action: base + "/findings"),
            table: findingsTable(outcome, filter: filter, info: info))
        let context = PageContext(
            chrome: Chrome(
                info: info, title: strings["section_findings"], basePath: base, operatorLinks: true, section: .findings),
            t: strings.table, page: content)
        return try renderer.render("findings", context)
    }

    /// Findings as JSON (the analysis reports).
    func findingsJSON(_ info: RequestInfo) async throws -> DataBody {
        let filter = try operatorFilter(info)
        switch try await computeFindings(filter) {
        case .tooMany(let count):
            throw WeheWebError(
                .invalidParameter, "the selection holds \(count) tests, more than \(configuration.crowdTestLimit)")
        case .computed(let entry):
            return .json(
                try Self.encode(entry.reports), filename: "wehe-findings-\(filter.fromDay)-\(filter.toDay).json")
        }
    }

    /// Findings as CSV: one row per detected rate, and one row per group without a rate.
    func findingsCSV(_ info: RequestInfo) async throws -> DataBody {
        let filter = try operatorFilter(info)
        switch try await computeFindings(filter) {
        case .tooMany(let count):
            throw WeheWebError(
                .invalidParameter, "the selection holds \(count) tests, more than \(configuration.crowdTestLimit)")
        case .computed(let entry):
            var csv = CSVTable(header: [
                "provider", "replay", "tests", "positive_tests", "rate_mbps", "lower_mbps", "upper_mbps",
                "true_positives", "note",
            ])
            for report in entry.reports {
                let common: [CSVTable.Cell] = [
                    .text(report.provider), .text(report.replay), .integer(report.totalTests),
                    .integer(report.positiveTests),
                ]
                if report.rates.isEmpty {
                    csv.rows.append(
                        common + [
                            .number(nil), .number(nil), .number(nil), .integer(report.truePositives),
                            .text(report.note ?? ""),
                        ])
                }
                for rate in report.rates {
                    csv.rows.append(
                        common + [
                            .number(rate.rate), .number(rate.lower), .number(rate.upper),
                            .integer(report.truePositives),
                            .text(report.note ?? ""),
                        ])
                }
            }
            return .csv(csv.rendered, filename: "wehe-findings-\(filter.fromDay)-\(filter.toDay).csv")
        }
    }
}
