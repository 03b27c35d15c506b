import Foundation
import Hummingbird
import WeheCore
import WeheStore

/// A legend entry of the timeline.
struct TimelineLegendItem {
    var swatch: String
    var label: String
}

/// A provider and app on the timeline page.
struct TimelineRowView {
    var provider: String
    var app: String
    var chart: String
    /// "Throttled since 4 Mar 2026 (6 runs)" and its siblings, for the published verdict.
    var status: String
    var throttledNow: Bool
    /// Whether a throttle was seen in the period at all.
    var throttledOnce: Bool
    /// The same for the sensitive or adaptive verdict, when the row has one.
    var sensitiveStatus: String?
    var runs: Int
    var couldNotJudge: Int
    var firstDay: String
    var lastDay: String
}

/// A choice of a filter's list.
struct TimelineChoice {
    var value: String
    var selected: Bool
}

/// The timeline page and its printable twin.
struct TimelineContent {
    var heading: String
    var intro: String
    /// Whether the page has "since when" (a person's history; the crowd's counts have no test order).
    var showSince: Bool
    var title: String
    var summary: String
    var source: String
    var truncatedNote: String?
    var from: String
    var to: String
    var providers: [TimelineChoice]
    var apps: [TimelineChoice]
    var legend: [TimelineLegendItem]
    var rows: [TimelineRowView]
    /// The rows for "since when": throttled now first, then those throttled earlier in the period, then the rest.
    var sinceRows: [TimelineRowView]
    var isEmpty: Bool
    var printHref: String
    var jsonHref: String
    var pageHref: String
    var actionHref: String
    var lang: String
    var generated: String
}

extension Dashboard {
    /// Adds the timeline under `configuration.personPath`: `/timeline` (the page), `/timeline/print` (the page to
    /// share or print) and `/api/timeline` (the same data as JSON).
    func addTimelineRoutes<Router: RouterMethods>(to router: Router) {
        let base = configuration.personPath
        router.get(RouterPath(base + "/timeline")) { request, _ in
            await page(request, operatorPage: false) { info in try await timelineHTML(info, printable: false) }
        }
        router.get(RouterPath(base + "/timeline/print")) { request, _ in
            await page(request, operatorPage: false) { info in try await timelineHTML(info, printable: true) }
        }
        router.get(RouterPath(base + "/api/timeline")) { request, _ in
            await data(request, operatorPage: false) { info in try await timelineJSON(info) }
        }
    }

    /// The runs of the configured user's history in the period (before the provider and app filters), the newest
    /// `TimelineQuery.maximumRuns`, and whether that limit or the scan limit cut some.
    func personTimelineRuns(_ query: TimelineQuery, formatter: Formatter) async throws -> (
        runs: [TimelineRun], truncated: Bool
    ) {
        guard let userID = configuration.userID else {
            throw WeheWebError(.notFound, "no user is configured for this dashboard")
        }
        let end = formatter.nextDay(after: query.to)
        var runs: [TimelineRun] = []
        var before: Int?
        var scanned = 0
        let strings = Strings(.english)
        while scanned < TimelineQuery.maximumScanned {
            let page = try await configuration.store.history(
                userID: userID, beforeHistoryCount: before, limit: min(500, TimelineQuery.maximumScanned - scanned))
            guard let last = page.last else { return (runs, false) }
            scanned += page.count
            for overview in page where overview.metadata.startedAt >= query.from && overview.metadata.startedAt < end {
                if runs.count == TimelineQuery.maximumRuns { return (runs, true) }
                runs.append(Self.timelineRun(overview, formatter: formatter, names: names, strings: strings))
            }
            // The history runs newest first: a page entirely before the period ends the search.
            if page.allSatisfy({ $0.metadata.startedAt < query.from }) { return (runs, false) }
            before = last.key.historyCount
        }
        return (runs, true)
    }

    /// A history entry as a timeline run.
    static func timelineRun(_ overview: TestOverview, formatter: Formatter, names: AppNames, strings: Strings)
        -> TimelineRun
    {
        let analysis = overview.analysis
        var slowdown: Double?
        if let analysis, analysis.controlMeanMbps > 0, analysis.originalMeanMbps.isFinite {
            slowdown = 1 - analysis.originalMeanMbps / analysis.controlMeanMbps
        }
        let sensitive = overview.sensitive
        return TimelineRun(
            day: formatter.isoDay(overview.metadata.startedAt), startedAt: overview.metadata.startedAt,
            provider: overview.metadata.provider ?? strings["unknown_provider"],
            app: names.displayName(ofReplay: overview.metadata.replayName),
            published: TimelineMark(verdict: analysis?.verdict, direction: analysis?.direction),
            slowdown: slowdown,
            sensitive: sensitive.map { TimelineMark(verdict: $0.verdict, direction: $0.direction) },
            sensitiveSlowdown: sensitive?.slowdown)
    }

    /// The timeline of the configured user's history for a request's filters, with the lists of providers and
    /// apps of the period.
    func personTimeline(_ info: RequestInfo) async throws -> (
        query: TimelineQuery, timeline: Timeline, providers: [String], apps: [String]
    ) {
        let query = try TimelineQuery.parse(info, now: configuration.now())
        let (runs, truncated) = try await personTimelineRuns(query, formatter: info.formatter)
        let providers = Set(runs.map(\.provider)).sorted()
        let apps = Set(runs.map(\.app)).sorted()
        let chosen = runs.filter { run in
            (query.provider.map { $0 == run.provider } ?? true) && (query.app.map { $0 == run.app } ?? true)
        }
        let timeline = Timeline(
            runs: chosen, days: query.days(formatter: info.formatter), source: "local-history", truncated: truncated)
        return (query, timeline, providers, apps)
    }

    /// The timeline page (`printable`: the page to share or print, without navigation).
    func timelineHTML(_ info: RequestInfo, printable: Bool) async throws -> String {
        let (query, timeline, providers, apps) = try await personTimeline(info)
        let content = timelineContent(
            info, query: query, timeline: timeline, providers: providers, apps: apps, crowd: false)
        let context = PageContext(
            chrome: Chrome(
                info: info, title: content.title, basePath: configuration.personPath, operatorLinks: false,
                section: .timeline),
            t: info.strings.table, page: content)
        return try renderer.render(printable ? "timeline-print" : "timeline", context)
    }

    /// The timeline as JSON: the same data as the page.
    func timelineJSON(_ info: RequestInfo) async throws -> DataBody {
        let (_, timeline, _, _) = try await personTimeline(info)
        return .json(try Self.encode(timeline))
    }

    /// What the timeline templates show.
    func timelineContent(
        _ info: RequestInfo, query: TimelineQuery, timeline: Timeline, providers: [String], apps: [String],
        crowd: Bool
    ) -> TimelineContent {
        let source = info.strings[crowd ? "timeline_source_crowd" : "timeline_source_local"]
        let strings = info.strings
        let formatter = info.formatter
        func date(_ day: String) -> String { formatter.parseDay(day).map { formatter.date($0) } ?? day }
        let from = date(timeline.from)
        let to = date(timeline.to)
        let who = query.provider ?? strings["timeline_all_providers"]
        let title = strings.format("timeline_title_period", ["provider": who, "from": from, "to": to])
        let rows = timeline.rows.map { row in
            TimelineRowView(
                provider: row.provider, app: row.app,
                chart: TimelineChart.render(row: row, days: timeline.days, strings: strings, formatter: formatter),
                status: crowd
                    ? strings.format(
                        "timeline_crowd_status",
                        ["tests": formatter.integer(row.runs), "unjudged": formatter.integer(row.couldNotJudge)])
                    : Self.stretchText(row.publishedStretch, strings: strings, date: date),
                throttledNow: row.publishedStretch?.current ?? false, throttledOnce: row.publishedStretch != nil,
                sensitiveStatus: row.sensitive.isEmpty
                    ? nil
                    : strings["timeline_lane_sensitive"] + ": "
                        + Self.stretchText(row.sensitiveStretch, strings: strings, date: date),
                runs: row.runs, couldNotJudge: row.couldNotJudge, firstDay: from, lastDay: to)
        }
        let throttled = rows.filter(\.throttledNow).map { $0.app + " (" + $0.provider + ")" }
        var summary = strings.format(
            "timeline_summary",
            [
                "runs": formatter.integer(timeline.runs),
                "apps": formatter.integer(Set(timeline.rows.map(\.app)).count),
                "providers": formatter.integer(Set(timeline.rows.map(\.provider)).count), "from": from, "to": to,
            ])
        let differentiated = timeline.rows.filter { $0.published.contains { $0.mark == .differentiation } }
            .map { $0.app + " (" + $0.provider + ")" }
        summary +=
            " "
            + (crowd
                ? (differentiated.isEmpty
                    ? strings["timeline_crowd_summary_none"]
                    : strings.format("timeline_crowd_summary_some", ["list": differentiated.joined(separator: ", ")]))
                : throttled.isEmpty
                    ? strings["timeline_summary_none"]
                    : strings.format("timeline_summary_throttled", ["list": throttled.joined(separator: ", ")]))
        let items = query.items(formatter: formatter) + [("lang", info.language.rawValue)]
        let base = crowd ? configuration.operatorPath : configuration.personPath
        let queryText = RequestInfo.encodeQuery(items)
        var legend = (1...4).map { bucket in
            TimelineLegendItem(
                swatch: TimelineChart.swatch(.throttled, bucket: bucket),
                label: strings[(crowd ? "timeline_crowd_legend_s" : "timeline_legend_s") + "\(bucket)"])
        }
        if !crowd {
            legend.append(
                TimelineLegendItem(
                    swatch: TimelineChart.swatch(.prioritized), label: strings["timeline_legend_prioritized"]))
        }
        legend += [
            TimelineLegendItem(swatch: TimelineChart.swatch(.none), label: strings["timeline_legend_none"]),
            TimelineLegendItem(
                swatch: TimelineChart.swatch(.inconclusive), label: strings["timeline_legend_inconclusive"]),
            TimelineLegendItem(swatch: TimelineChart.swatch(.blocked), label: strings["timeline_legend_blocked"]),
        ]
        return TimelineContent(
            heading: strings[crowd ? "timeline_crowd_heading" : "timeline_heading"],
            intro: strings[crowd ? "timeline_crowd_intro" : "timeline_intro"], showSince: !crowd, title: title,
            summary: summary,
            source: strings.format("timeline_source", ["source": source, "count": formatter.integer(timeline.runs)]),
            truncatedNote: timeline.truncated
                ? strings.format("timeline_truncated", ["limit": formatter.integer(TimelineQuery.maximumRuns)]) : nil,
            from: timeline.from, to: timeline.to,
            providers: providers.map { TimelineChoice(value: $0, selected: $0 == query.provider) },
            apps: apps.map { TimelineChoice(value: $0, selected: $0 == query.app) }, legend: legend, rows: rows,
            sinceRows: rows.enumerated().sorted { a, b in
                let rank = { (row: TimelineRowView) in row.throttledNow ? 0 : row.throttledOnce ? 1 : 2 }
                return (rank(a.element), a.offset) < (rank(b.element), b.offset)
            }.map(\.element),
            isEmpty: rows.isEmpty, printHref: base + "/timeline/print?" + queryText,
            jsonHref: base + (crowd ? "/timeline.json?" : "/api/timeline?") + queryText,
            pageHref: base + "/timeline?" + queryText,
            actionHref: base + "/timeline", lang: info.language.rawValue,
            generated: strings.format("timeline_generated", ["date": formatter.dateTime(configuration.now())]))
    }

    /// "Throttled since 4 Mar 2026 (6 runs)", "Throttled from … to …, not on …", "No throttling seen".
    static func stretchText(_ stretch: TimelineStretch?, strings: Strings, date: (String) -> String) -> String {
        guard let stretch else { return strings["timeline_status_never"] }
        let runs = strings.format(
            stretch.runs == 1 ? "timeline_runs_one" : "timeline_runs", ["count": "\(stretch.runs)"])
        if let stopped = stretch.stopped {
            return strings.format(
                stretch.since == stretch.lastSeen ? "timeline_status_stopped_one" : "timeline_status_stopped",
                ["since": date(stretch.since), "last": date(stretch.lastSeen), "stopped": date(stopped), "runs": runs])
        }
        return strings.format("timeline_status_since", ["since": date(stretch.since), "runs": runs])
    }
}

extension Dashboard {
    /// The most count rows (provider × app × day × verdict) one crowd timeline reads.
    static let maximumCrowdTimelineRows = 100_000

    /// Adds the crowd's timeline under `configuration.operatorPath`: `/timeline`, `/timeline/print` and
    /// `/timeline.json` (aggregate counts per day, nothing about any one test).
    func addCrowdTimelineRoutes<Router: RouterMethods>(to router: Router) {
        let base = configuration.operatorPath
        router.get(RouterPath(base + "/timeline")) { request, _ in
            await page(request, operatorPage: true) { info in try await crowdTimelineHTML(info, printable: false) }
        }
        router.get(RouterPath(base + "/timeline/print")) { request, _ in
            await page(request, operatorPage: true) { info in try await crowdTimelineHTML(info, printable: true) }
        }
        router.get(RouterPath(base + "/timeline.json")) { request, _ in
            await data(request, operatorPage: true) { info in
                .json(try Self.encode(try await crowdTimeline(info).timeline))
            }
        }
    }

    /// The crowd's timeline for a request's filters (days are UTC days, as the store counts them), with the lists
    /// of providers and apps of the period.
    func crowdTimeline(_ info: RequestInfo) async throws -> (
        query: TimelineQuery, timeline: Timeline, providers: [String], apps: [String]
    ) {
        let utc = Formatter(language: info.language, timeZone: .gmt)
        let query = try TimelineQuery.parse(info, now: configuration.now(), formatter: utc)
        var rows = try await configuration.store.counts(
            CountQuery(
                groupBy: [.provider, .replay, .day, .verdict], from: query.from, to: utc.nextDay(after: query.to),
                providers: query.provider.map { [$0] }))
        let truncated = rows.count > Self.maximumCrowdTimelineRows
        if truncated {
            rows = Array(rows.sorted { ($0.day ?? 0) > ($1.day ?? 0) }.prefix(Self.maximumCrowdTimelineRows))
        }
        let unknown = info.strings["unknown_provider"]
        let providers = Set(rows.map { $0.provider ?? unknown }).sorted()
        let apps = Set(rows.map { names.displayName(ofReplay: $0.replayName ?? "") }).sorted()
        let timeline = Timeline(
            counts: rows, days: query.days(formatter: utc), source: "server-store", truncated: truncated,
            unknownProvider: unknown, app: { names.displayName(ofReplay: $0) },
            include: { provider, app in
                (query.provider.map { $0 == provider } ?? true) && (query.app.map { $0 == app } ?? true)
            })
        return (query, timeline, providers, apps)
    }

    /// The crowd's timeline page (`printable`: the page to share or print).
    func crowdTimelineHTML(_ info: RequestInfo, printable: Bool) async throws -> String {
        let (query, timeline, providers, apps) = try await crowdTimeline(info)
        var content = timelineContent(
            info, query: query, timeline: timeline, providers: providers, apps: apps, crowd: true)
        let utc = Formatter(language: info.language, timeZone: .gmt)
        func date(_ day: String) -> String { utc.parseDay(day).map { utc.date($0) } ?? day }
        content.rows = content.rows.map { row in
            var row = row
            row.firstDay = date(timeline.from)
            row.lastDay = date(timeline.to)
            return row
        }
        let context = PageContext(
            chrome: Chrome(
                info: info, title: content.title, basePath: configuration.operatorPath, operatorLinks: true,
                section: .timeline),
            t: info.strings.table, page: content)
        return try renderer.render(printable ? "timeline-print" : "timeline", context)
    }
}
