import Foundation
import Testing
import WeheCore
import WeheStore

/// Retention: `purge(before:)` deletes tests with their samples and analyses, localization runs,
/// loss timelines, session-log entries and DPI searches (abandoned running ones and finished ones) older than the
/// cutoff, and nothing newer.
@Suite("ResultStore purge")
struct PurgeTests {
    static func loss(_ key: ReplayKey, at seconds: Double) -> ReplayLossRecord {
        ReplayLossRecord(
            key: key, recordedAt: Fixtures.date(seconds), minimumRTT: 0.02, duration: 0.03,
            samples: [ReplayLossRecord.Sample(time: 0.01, bytesSent: 1448, bytesLost: 0)])
    }

    static func run(_ user: String, at seconds: Double) -> LocalizationRun {
        LocalizationRun(
            userID: user, historyCounts: [11, 12], servers: ["192.0.2.1", "192.0.2.2"], replayName: "Netflix-05132024",
            singleServer: nil, singleHistoryCount: nil, requestedAt: Fixtures.date(seconds))
    }

    static func dpiSearch(_ id: DPISearchID, updatedAt seconds: Double) -> DPISearchRecord {
        DPISearchRecord(
            id: id, historyCount: 1, startedAt: Fixtures.date(seconds - 10), updatedAt: Fixtures.date(seconds),
            probes: 3, bytesUsed: 1_000, state: "{}")
    }

    static func dpiResult(_ id: DPISearchID, finishedAt seconds: Double) -> DPIResultRecord {
        DPIResultRecord(
            id: id, historyCount: 1, startedAt: Fixtures.date(seconds - 60), finishedAt: Fixtures.date(seconds),
            probes: 10, bytesUsed: 5_000, outcome: "noDPIInFirstPackets", message: "NO DPI for first 10 pacs",
            rules: [])
    }

    @Test("everything older than the cutoff goes, everything newer stays", arguments: StoreKind.allCases)
    func purgeOlderThanCutoff(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let old = Fixtures.test(user: "@old00001", count: 1, at: 100, verdict: .differentiation)
            let older = Fixtures.test(user: "@old00002", count: 1, at: 50)
            let recent = Fixtures.test(user: "@new00001", count: 1, at: 5_000, verdict: .noDifferentiation)
            try await store.save(tests: [old, older, recent])
            try await store.save(loss: Self.loss(ReplayKey(userID: "@old00001", historyCount: 1, testID: 0), at: 100))
            try await store.save(loss: Self.loss(ReplayKey(userID: "@new00001", historyCount: 1, testID: 0), at: 5_000))
            try await store.save(localization: Self.run("@old00001", at: 200))
            try await store.save(localization: Self.run("@new00001", at: 6_000))
            try await store.append(events: [
                SessionEvent(at: Fixtures.date(90), kind: .error, detail: "old"),
                SessionEvent(at: Fixtures.date(99), kind: .admissionGranted, detail: "old"),
                SessionEvent(at: Fixtures.date(5_001), kind: .admissionGranted, detail: "new"),
            ])

            // DPI searches: one abandoned before the cutoff, one still running after it, one outcome from before and
            // one from after.
            let search = DPISearchID(userID: "@old00001", carrierName: "Orange", replayName: "Netflix-05132024")
            var running = search
            running.userID = "@new00001"
            try await store.save(dpiSearch: Self.dpiSearch(search, updatedAt: 300))
            try await store.save(dpiSearch: Self.dpiSearch(running, updatedAt: 5_500))
            var oldSearch = search
            oldSearch.replayName = "YouTube-05132024"
            try await store.finish(dpiSearch: Self.dpiResult(oldSearch, finishedAt: 400))
            var newSearch = running
            newSearch.replayName = "YouTube-05132024"
            try await store.finish(dpiSearch: Self.dpiResult(newSearch, finishedAt: 5_400))

            let counts = try await store.purge(before: Fixtures.date(1_000))
            #expect(
                counts
                    == PurgeCounts(
                        tests: 2, replays: 4, analyses: 1, localizations: 1, losses: 1, events: 2, dpiSearches: 1,
                        dpiResults: 1),
                "\(counts)")
            #expect(try await store.dpiSearch(search) == nil)
            #expect(try await store.dpiSearch(running) != nil)
            #expect(try await store.dpiResults(DPIResultQuery(userID: "@old00001")).isEmpty)
            #expect(try await store.dpiResults(DPIResultQuery(userID: "@new00001")).count == 1)
            #expect(try await store.test(old.key) == nil)
            #expect(try await store.test(older.key) == nil)
            #expect(try await store.test(recent.key) == Fixtures.stored(recent))
            #expect(try await store.loss(ReplayKey(userID: "@old00001", historyCount: 1, testID: 0)) == nil)
            #expect(try await store.loss(ReplayKey(userID: "@new00001", historyCount: 1, testID: 0)) != nil)
            #expect(try await store.localizations(userID: "@old00001").isEmpty)
            #expect(try await store.localizations(userID: "@new00001").count == 1)
            #expect(try await store.sessionEvents(SessionEventQuery()).map(\.detail) == ["new"])
            // The dashboards' counts no longer include the purged tests.
            let rows = try await store.counts(CountQuery(groupBy: [.replay]))
            #expect(rows.map(\.count).reduce(0, +) == 1)
            // A second purge finds nothing.
            #expect(try await store.purge(before: Fixtures.date(1_000)).isEmpty)
        }
    }
}
