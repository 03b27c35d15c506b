package import Foundation
package import WeheCore
package import WeheStore

/// What one run said, reduced to what the timeline draws.
package enum TimelineMark: String, Sendable, Hashable, Codable, CaseIterable {
    /// The app's traffic was slower than the control: throttled.
    case throttled
    /// The app's traffic was faster than the control.
    case prioritized
    /// No differentiation.
    case none = "no-differentiation"
    /// The run could not judge: an inconclusive verdict, too few measurements, or no analysis (an error).
    case inconclusive
    /// The tested port could not be reached.
    case blocked
    /// Differentiation of unknown direction: the crowd's per-day counts, which keep the verdict and nothing else.
    case differentiation

    /// The mark of a verdict (`nil`: the run was never analysed, which the timeline shows as "could not judge").
    package init(verdict: Verdict?, direction: DifferentiationDirection?) {
        switch verdict {
        case .differentiation: self = direction == .prioritized ? .prioritized : .throttled
        case .noDifferentiation: self = .none
        case .blocked: self = .blocked
        case .inconclusive, nil: self = .inconclusive
        }
    }

    /// Whether the run reached a verdict on differentiation (the runs that start or end a throttled stretch).
    package var judged: Bool { self == .throttled || self == .prioritized || self == .none || self == .differentiation }
}

/// One run as the timeline sees it: when, where, which app, both verdicts.
package struct TimelineRun: Sendable, Hashable, Codable {
    /// The day it ran, `YYYY-MM-DD` in the dashboard's time zone.
    package var day: String
    /// When it started.
    package var startedAt: Date
    /// The provider's name.
    package var provider: String
    /// The app's display name.
    package var app: String
    /// The published verdict.
    package var published: TimelineMark
    /// How much slower the app's traffic was than the control under the published verdict (1 − original/control
    /// means, negative when faster), when both means are known.
    package var slowdown: Double?
    /// The sensitive or adaptive verdict, when the test had one.
    package var sensitive: TimelineMark?
    /// The slowdown the sensitive or adaptive verdict estimated.
    package var sensitiveSlowdown: Double?

    /// Creates a run.
    package init(
        day: String, startedAt: Date, provider: String, app: String, published: TimelineMark, slowdown: Double?,
        sensitive: TimelineMark? = nil, sensitiveSlowdown: Double? = nil
    ) {
        self.day = day
        self.startedAt = startedAt
        self.provider = provider
        self.app = app
        self.published = published
        self.slowdown = slowdown
        self.sensitive = sensitive
        self.sensitiveSlowdown = sensitiveSlowdown
    }
}

/// The runs of one day in one lane (published or sensitive verdicts) of one provider and app.
package struct TimelineDay: Sendable, Hashable, Codable {
    /// `YYYY-MM-DD`.
    package var day: String
    /// How many runs of each mark (keys: `TimelineMark` raw values).
    package var counts: [String: Int]
    /// The day's mark: throttled when any run was, else prioritized, else no differentiation, else blocked, else
    /// could not judge.
    package var mark: TimelineMark
    /// The largest slowdown of the day's throttled runs (or of its prioritized runs, negative), when known.
    package var slowdown: Double?
    /// Every run of the day.
    package var runs: Int
    /// The share of the day's tests that judged and found differentiation (the crowd's days only).
    package var share: Double? = nil

    /// The day of `marks` (each with its slowdown); `nil` for no runs.
    static func summarize(day: String, _ marks: [(TimelineMark, Double?)]) -> TimelineDay? {
        guard !marks.isEmpty else { return nil }
        var counts: [String: Int] = [:]
        for (mark, _) in marks { counts[mark.rawValue, default: 0] += 1 }
        let order: [TimelineMark] = [.throttled, .differentiation, .prioritized, .none, .blocked, .inconclusive]
        let mark = order.first { counts[$0.rawValue] != nil } ?? .inconclusive
        let slowdowns = marks.filter { $0.0 == mark }.compactMap(\.1).filter(\.isFinite)
        let slowdown: Double? =
            switch mark {
            case .throttled: slowdowns.max()
            case .prioritized: slowdowns.min()
            default: nil
            }
        return TimelineDay(day: day, counts: counts, mark: mark, slowdown: slowdown, runs: marks.count)
    }
}

/// "Since when": the latest stretch of throttled verdicts of a lane, in the runs' order. Runs that could not judge
/// neither start nor end a stretch; a run that judged "no differentiation" or "faster" ends it.
package struct TimelineStretch: Sendable, Hashable, Codable {
    /// The day of the stretch's first throttled run.
    package var since: String
    /// The day of its last throttled run.
    package var lastSeen: String
    /// The day of the first judged run that was not throttled after the stretch; `nil` while it goes on.
    package var stopped: String?
    /// How many throttled runs the stretch holds.
    package var runs: Int

    /// Whether the throttling goes on (the latest judged run was throttled).
    package var current: Bool { stopped == nil }

    /// The latest throttled stretch of `marks` (in time order, with their days), or `nil` if none was throttled.
    package static func latest(_ marks: [(day: String, mark: TimelineMark)]) -> TimelineStretch? {
        let judged = marks.filter(\.mark.judged)
        guard let lastThrottled = judged.lastIndex(where: { $0.mark == .throttled }) else { return nil }
        var first = lastThrottled
        while first > 0, judged[first - 1].mark == .throttled { first -= 1 }
        let stopped = judged.index(after: lastThrottled) < judged.endIndex ? judged[lastThrottled + 1].day : nil
        return TimelineStretch(
            since: judged[first].day, lastSeen: judged[lastThrottled].day, stopped: stopped,
            runs: lastThrottled - first + 1)
    }
}

/// The timeline of one provider and app over the period.
package struct TimelineRow: Sendable, Hashable, Codable {
    /// The provider's name.
    package var provider: String
    /// The app's display name.
    package var app: String
    /// Days with runs, in order, under the published verdict.
    package var published: [TimelineDay]
    /// Days with a sensitive or adaptive verdict, in order (empty when no run had one).
    package var sensitive: [TimelineDay]
    /// The latest throttled stretch under the published verdict.
    package var publishedStretch: TimelineStretch?
    /// The latest throttled stretch under the sensitive or adaptive verdict.
    package var sensitiveStretch: TimelineStretch?
    /// How many runs.
    package var runs: Int
    /// How many runs could not judge (published verdict inconclusive, too few measurements, or never analysed).
    package var couldNotJudge: Int
}

/// Every provider and app's verdicts over a period, grouped by day: what the timeline page and its JSON show.
package struct Timeline: Sendable, Hashable, Codable {
    /// The first day of the period, `YYYY-MM-DD`.
    package var from: String
    /// The last day of the period (included).
    package var to: String
    /// Every day of the period, in order (the horizontal axis).
    package var days: [String]
    /// One row per provider and app, by provider then app.
    package var rows: [TimelineRow]
    /// How many runs the timeline holds.
    package var runs: Int
    /// Whether the row limit cut the runs (the oldest of the period are then missing).
    package var truncated: Bool
    /// Where the data comes from (`local history`, `server store`).
    package var source: String

    /// Groups `runs` (any order) by provider and app, then by day. Runs on days outside `days` are left out.
    package init(runs: [TimelineRun], days: [String], source: String, truncated: Bool = false) {
        self.from = days.first ?? ""
        self.to = days.last ?? ""
        self.days = days
        self.source = source
        self.truncated = truncated
        let inPeriod = Set(days)
        let kept = runs.filter { inPeriod.contains($0.day) }.sorted { $0.startedAt < $1.startedAt }
        self.runs = kept.count
        struct Key: Hashable {
            var provider: String
            var app: String
        }
        let groups = Dictionary(grouping: kept) { Key(provider: $0.provider, app: $0.app) }
        self.rows = groups.keys.sorted { ($0.provider, $0.app) < ($1.provider, $1.app) }.map { key in
            let group = groups[key] ?? []
            let byDay = Dictionary(grouping: group, by: \.day)
            var published: [TimelineDay] = []
            var sensitive: [TimelineDay] = []
            for day in days {
                guard let runs = byDay[day] else { continue }
                if let summary = TimelineDay.summarize(day: day, runs.map { ($0.published, $0.slowdown) }) {
                    published.append(summary)
                }
                let withSensitive = runs.compactMap { run in run.sensitive.map { ($0, run.sensitiveSlowdown) } }
                if let summary = TimelineDay.summarize(day: day, withSensitive) { sensitive.append(summary) }
            }
            return TimelineRow(
                provider: key.provider, app: key.app, published: published, sensitive: sensitive,
                publishedStretch: TimelineStretch.latest(group.map { ($0.day, $0.published) }),
                sensitiveStretch: TimelineStretch.latest(
                    group.compactMap { run in run.sensitive.map { (run.day, $0) } }),
                runs: group.count, couldNotJudge: group.filter { $0.published == .inconclusive }.count)
        }
    }
}

extension Timeline {
    /// The crowd's timeline from per-day counts grouped by provider, app, day and verdict: aggregate numbers only,
    /// nothing about any one test. A day with a test that found differentiation is a full-height cell coloured by
    /// the share of the day's judged tests that found it; a day whose judged tests all found none is short; a day
    /// with no judged test is hollow. "Since when" stays empty (the counts carry no direction and no test order).
    /// - Parameters:
    ///   - counts: rows grouped by `.provider`, `.replay`, `.day` and `.verdict`.
    ///   - days: the period's days (`YYYY-MM-DD`, UTC, as the store's day numbers).
    ///   - app: the display name of a replay.
    package init(
        counts: [CountRow], days: [String], source: String, truncated: Bool, unknownProvider: String,
        app: (String) -> String, include: (String, String) -> Bool
    ) {
        struct Key: Hashable {
            var provider: String
            var app: String
        }
        var grouped: [Key: [String: [String: Int]]] = [:]
        let inPeriod = Set(days)
        var total = 0
        for row in counts {
            guard let dayNumber = row.day, row.count > 0 else { continue }
            let day = Self.isoDay(dayNumber)
            let key = Key(provider: row.provider ?? unknownProvider, app: app(row.replayName ?? ""))
            guard inPeriod.contains(day), include(key.provider, key.app) else { continue }
            grouped[key, default: [:]][day, default: [:]][row.verdict?.rawValue ?? "not-analysed", default: 0] +=
                row.count
            total += row.count
        }
        self.from = days.first ?? ""
        self.to = days.last ?? ""
        self.days = days
        self.source = source
        self.truncated = truncated
        self.runs = total
        self.rows = grouped.keys.sorted { ($0.provider, $0.app) < ($1.provider, $1.app) }.map { key in
            let perDay = grouped[key] ?? [:]
            var cells: [TimelineDay] = []
            var unjudged = 0
            for day in days {
                guard let counts = perDay[day] else { continue }
                let differentiation = counts[Verdict.differentiation.rawValue] ?? 0
                let none = counts[Verdict.noDifferentiation.rawValue] ?? 0
                let blocked = counts[Verdict.blocked.rawValue] ?? 0
                let runs = counts.values.reduce(0, +)
                unjudged += runs - differentiation - none - blocked
                let judged = differentiation + none
                let mark: TimelineMark =
                    differentiation > 0 ? .differentiation : none > 0 ? .none : blocked > 0 ? .blocked : .inconclusive
                cells.append(
                    TimelineDay(
                        day: day, counts: counts, mark: mark, slowdown: nil, runs: runs,
                        share: judged > 0 ? Double(differentiation) / Double(judged) : nil))
            }
            return TimelineRow(
                provider: key.provider, app: key.app, published: cells, sensitive: [], publishedStretch: nil,
                sensitiveStretch: nil, runs: cells.reduce(0) { $0 + $1.runs }, couldNotJudge: unjudged)
        }
    }

    /// `YYYY-MM-DD` of a store day number (days since 1970-01-01, UTC).
    static func isoDay(_ number: Int) -> String {
        Formatter(language: .english, timeZone: .gmt).isoDay(Date(timeIntervalSince1970: Double(number) * 86_400))
    }
}
