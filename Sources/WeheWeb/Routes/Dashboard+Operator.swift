import Foundation
import Hummingbird
import WeheCore
import WeheStore

extension Dashboard {
    /// The filter of an operator request.
    func operatorFilter(_ info: RequestInfo) throws(WeheWebError) -> OperatorFilter {
        try OperatorFilter.parse(
            info, now: configuration.now(), formatter: info.formatter, defaultDays: configuration.operatorDefaultDays,
            maximumDays: configuration.maximumRangeDays)
    }

    /// Reads the overview: two grouped counts over the range (provider × replay × verdict, and day), the session
    /// log counts, the WeHeY runs and the health source, aggregated in the database.
    package func overview(_ filter: OperatorFilter, strings: Strings) async throws -> OperatorOverview {
        let store = configuration.store
        let clock = configuration.clock
        var eventCounts: [SessionEventCount] = []
        let elapsed = try await clock.measure {
            eventCounts = try await store.sessionEventCounts(from: filter.from, to: filter.to)
        }
        async let groupedRows = store.counts(
            CountQuery(groupBy: [.provider, .replay, .verdict], from: filter.from, to: filter.to))
        async let dayRows = store.counts(
            CountQuery(
                groupBy: [.day], from: filter.from, to: filter.to,
                providers: filter.providers.isEmpty ? nil : filter.providers,
                replays: filter.apps.isEmpty ? nil : filter.apps))
        async let localizationRuns = loadLocalizations(filter)
        async let snapshot = configuration.health?.healthSnapshot()
        let rows = try await groupedRows
        let days = try await dayRows

        var providers = Set<String>()
        var apps = Set<String>()
        var perApp: [String: OperatorOverview.Breakdown] = [:]
        var perProvider: [String: OperatorOverview.Breakdown] = [:]
        var cells: [String: OperatorOverview.Cell] = [:]
        var total = 0
        var differentiation = 0
        let unknown = strings["unknown_provider"]
        for row in rows {
            let provider = row.provider ?? ""
            let app = row.replayName ?? ""
            if !provider.isEmpty { providers.insert(provider) }
            if !app.isEmpty { apps.insert(app) }
            guard filter.includes(provider: row.provider, app: row.replayName) else { continue }
            total += row.count
            if row.verdict == .differentiation { differentiation += row.count }
            perApp[app, default: .init(name: app, displayName: names.displayName(ofReplay: app))].add(
                row.verdict, row.count)
            perProvider[provider, default: .init(name: provider, displayName: provider.isEmpty ? unknown : provider)]
                .add(row.verdict, row.count)
            let key = provider + "\u{0}" + app
            var cell = cells[key] ?? .init(provider: provider, app: app, tests: 0, differentiation: 0)
            cell.tests += row.count
            if row.verdict == .differentiation { cell.differentiation += row.count }
            cells[key] = cell
        }
        let byTests: (OperatorOverview.Breakdown, OperatorOverview.Breakdown) -> Bool = {
            ($0.tests, $1.displayName) > ($1.tests, $0.displayName)
        }
        var perDay: [OperatorOverview.DayCount] = []
        let counted = Dictionary(days.compactMap { row in row.day.map { ($0, row.count) } }, uniquingKeysWith: +)
        let firstDay = filter.from.storeDay
        let lastDay = filter.to.addingTimeInterval(-1).storeDay
        if firstDay <= lastDay {
            for day in firstDay...lastDay {
                let date = Date(timeIntervalSince1970: Double(day) * 86_400)
                perDay.append(
                    .init(day: Formatter(language: .english, timeZone: .gmt).isoDay(date), tests: counted[day] ?? 0))
            }
        }
        let localizations = try await localizationRuns
        let health = buildHealth(
            elapsed: elapsed, events: eventCounts, snapshot: await snapshot, strings: strings)
        return OperatorOverview(
            from: filter.fromDay, to: filter.toDay, providers: filter.providers, apps: filter.apps, totalTests: total,
            differentiationTests: differentiation, perDay: perDay,
            perApp: perApp.values.sorted(by: byTests), perProvider: perProvider.values.sorted(by: byTests),
            matrix: cells.values.sorted { ($0.provider, $0.app) < ($1.provider, $1.app) },
            availableProviders: providers.sorted(), availableApps: apps.sorted(),
            localizations: localizations, health: health)
    }

    private func loadLocalizations(_ filter: OperatorFilter) async throws -> [OperatorOverview.Localization]? {
        guard let listing = configuration.localizations else { return nil }
        let runs: [LocalizationRun]
        do {
            runs = try await listing.localizationRuns(
                from: filter.from, to: filter.to, limit: configuration.localizationLimit)
        } catch let error as WeheStoreError {
            throw error
        } catch {
            throw WeheWebError(
                .computationFailed, "the WeHeY runs could not be listed", underlying: error)
        }
        return runs.map { run in
            OperatorOverview.Localization(
                requestedAt: run.requestedAt, replay: run.replayName, servers: run.servers,
                verdict: run.summary?.verdict, sumTestPValue: run.summary?.mwuPValue,
                averageLoss: run.summary?.averageLoss ?? [])
        }
    }

    /// A session-log kind the dashboard has no words for, made readable (`replay-timing` → `Replay timing`).
    static func readableKind(_ kind: String) -> String {
        let words = kind.replacingOccurrences(of: "-", with: " ").replacingOccurrences(of: "_", with: " ")
        return words.prefix(1).uppercased() + words.dropFirst()
    }

    private func buildHealth(
        elapsed: Duration, events: [SessionEventCount], snapshot: ServerHealthSnapshot?, strings: Strings
    ) -> OperatorOverview.Health {
        let milliseconds = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        var items = [
            HealthItem(
                name: strings["health_database"],
                value: strings.format("health_database_ok", ["ms": String(format: "%.0f", milliseconds.rounded(.up))]),
                status: milliseconds > 2_000 ? .degraded : .ok)
        ]
        let worrying: Set<SessionEvent.Kind> = [.error, .resultQueued, .resultRefused, .admissionDenied]
        for event in events.sorted(by: { $0.kind.rawValue < $1.kind.rawValue }) {
            let name = strings.table["health_event_" + event.kind.rawValue] ?? Self.readableKind(event.kind.rawValue)
            let status: HealthStatus =
                event.kind == .resultRefused && event.count > 0
                ? .down : (worrying.contains(event.kind) && event.count > 0 ? .degraded : .ok)
            items.append(
                HealthItem(
                    name: name, value: String(event.count), status: event.kind == .admissionDenied ? .ok : status))
        }
        items += snapshot?.items ?? []
        let worst = items.map(\.status).max() ?? .ok
        return OperatorOverview.Health(status: worst, startedAt: snapshot?.startedAt, items: items)
    }
}
