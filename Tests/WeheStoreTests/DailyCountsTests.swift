import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// Counts over whole UTC days (read from the SQL stores' daily summary) agree with the tests stored, whatever
/// the writes did to them; localization runs are listed across users by request time.
@Suite("Daily counts and cross-user listings")
struct DailyCountsTests {
    /// Day number of `Fixtures.date(0)` (noon UTC).
    static let firstDay = Fixtures.date(0).storeDay

    static func midnight(_ day: Int) -> Date { Date(timeIntervalSince1970: Double(day) * 86_400) }

    /// What a count over `records` grouped by `dimensions` must return.
    static func expected(_ records: [TestRecord], _ dimensions: [CountDimension]) -> [CountRow] {
        var groups: [CountRow: Int] = [:]
        for record in records {
            let row = CountRow(
                provider: dimensions.contains(.provider) ? record.metadata.provider : nil,
                replayName: dimensions.contains(.replay) ? record.metadata.replayName : nil,
                verdict: dimensions.contains(.verdict) ? record.mainAnalysis?.summary.verdict : nil,
                day: dimensions.contains(.day) ? record.metadata.startedAt.storeDay : nil,
                networkType: dimensions.contains(.networkType) ? record.metadata.networkType : nil,
                count: 0)
            groups[row, default: 0] += 1
        }
        return groups.map { entry in
            var row = entry.key
            row.count = entry.value
            return row
        }.sorted(by: CountRow.storeOrder)
    }

    @Test(
        "whole-day counts follow inserts, re-analyses, replaced tests and new replays",
        arguments: StoreKind.allCases)
    func wholeDayCountsFollowWrites(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let providers: [String?] = ["Verizon (cellular)", nil, "Comcast (WiFi)"]
            let networks: [String?] = ["LTE", "WIFI", nil]
            let verdicts: [Verdict?] = [.differentiation, nil, .noDifferentiation, .inconclusive]
            var records: [Int: TestRecord] = [:]
            for index in 0..<48 {
                records[index] = Fixtures.test(
                    count: index, replay: index % 2 == 0 ? "Pandora-05132024" : "Netflix-05132024",
                    provider: providers[index % 3], network: networks[index / 3 % 3], at: Double(index) * 9_000,
                    verdict: verdicts[index % 4], samples: 4)
            }
            try await store.save(tests: records.values.sorted { $0.key.historyCount < $1.key.historyCount })

            // A new analysis changes the verdict of test 1.
            let one = try #require(records[1])
            let analysis = Fixtures.analysis(one.key, .differentiation)
            try await store.save(analysis: analysis)
            records[1]?.analyses = [analysis]
            // A re-saved test moves to another provider, day and verdict.
            var moved = Fixtures.test(
                count: 2, provider: "AT&T (cellular)", at: 400_000, verdict: .inconclusive, samples: 4)
            moved.metadata.networkType = "LTE"
            try await store.save(test: moved)
            records[2] = moved
            // A new original replay drops the analysis of test 3 (not analysed any more).
            let three = try #require(records[3])
            let replay = Fixtures.replay(three.key, testID: 0, mean: 3, at: 20_000, count: 4)
            try await store.save(replay: replay, metadata: three.metadata)
            records[3]?.analyses = []

            let all = Array(records.values)
            for dimensions in [
                [CountDimension.provider, .replay, .verdict], [.day], [.day, .networkType], [.verdict], [],
            ] {
                #expect(try await store.counts(CountQuery(groupBy: dimensions)) == Self.expected(all, dimensions))
            }
            // Whole days [first + 1, first + 4): the summary; the same instants minus half a second (no test
            // starts then): the tests themselves. Both must match the records.
            let from = Self.midnight(Self.firstDay + 1)
            let to = Self.midnight(Self.firstDay + 4)
            let inRange = all.filter { $0.metadata.startedAt >= from && $0.metadata.startedAt < to }
            #expect(inRange.count > 10 && inRange.count < all.count)
            let grouped: [CountDimension] = [.provider, .verdict, .day]
            let whole = try await store.counts(CountQuery(groupBy: grouped, from: from, to: to))
            let shifted = try await store.counts(
                CountQuery(groupBy: grouped, from: from.addingTimeInterval(-0.5), to: to.addingTimeInterval(-0.5)))
            #expect(whole == Self.expected(inRange, grouped))
            #expect(shifted == whole)
            let filtered = try await store.counts(
                CountQuery(
                    groupBy: [.replay], from: from, to: to, providers: ["Verizon (cellular)", "AT&T (cellular)"],
                    verdicts: [.differentiation, .inconclusive]))
            let subset = inRange.filter {
                ["Verizon (cellular)", "AT&T (cellular)"].contains($0.metadata.provider ?? "")
                    && [.differentiation, .inconclusive].contains($0.mainAnalysis?.summary.verdict)
            }
            #expect(!subset.isEmpty)
            #expect(filtered == Self.expected(subset, [.replay]))
            // An empty range over whole days has no rows (groups emptied by moves are not reported).
            #expect(
                try await store.counts(
                    CountQuery(groupBy: [.provider], from: Self.midnight(1), to: Self.midnight(2))) == [])
        }
    }

    @Test("localization runs of every user are listed newest first within a range", arguments: StoreKind.allCases)
    func localizationRunsAcrossUsers(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            for (index, user) in ["@a", "@b", "@c", "@a"].enumerated() {
                try await store.save(
                    localization: LocalizationRun(
                        userID: user, historyCounts: [index * 2 + 1, index * 2 + 2], servers: ["s1", "s2"],
                        replayName: "Netflix-05132024", requestedAt: Fixtures.date(Double(index) * 100)))
            }
            let all = try await store.localizationRuns(from: nil, to: nil, limit: 10)
            #expect(all.map(\.historyCounts) == [[7, 8], [5, 6], [3, 4], [1, 2]])
            #expect(all.map(\.userID) == ["@a", "@c", "@b", "@a"])
            let middle = try await store.localizationRuns(from: Fixtures.date(50), to: Fixtures.date(250), limit: 10)
            #expect(middle.map(\.userID) == ["@c", "@b"])
            #expect(try await store.localizationRuns(from: Fixtures.date(0), to: nil, limit: 2).count == 2)
            #expect(try await store.localizationRuns(from: Fixtures.date(1_000), to: nil, limit: 5).isEmpty)
        }
    }

    @Test("opening a database made before the summary existed back-fills it")
    func migrationBackfillsSummary() async throws {
        try await StoreHarness.withTemporaryDirectory { directory in
            let path = directory + "/old.sqlite"
            let records = (0..<30).map { index in
                Fixtures.test(
                    count: index, provider: index % 2 == 0 ? "Verizon (cellular)" : nil, at: Double(index) * 20_000,
                    verdict: index % 3 == 0 ? .differentiation : .noDifferentiation, samples: 4)
            }
            let store = try await SQLiteFailureTests.open(path)
            try await store.save(tests: records)
            await store.close()
            // Back to the version-2 schema (before the summary), with the tests still in it.
            try await SQLiteFailureTests.raw(
                path,
                [
                    "DROP TRIGGER wehe_daily_counts_insert", "DROP TRIGGER wehe_daily_counts_update",
                    "DROP TRIGGER wehe_daily_counts_delete", "DROP TABLE wehe_daily_counts",
                    "DROP INDEX wehe_localizations_requested", "DROP TABLE wehe_dpi_searches",
                    "DROP TABLE wehe_dpi_results", "ALTER TABLE wehe_tests DROP COLUMN sensitive",
                    "ALTER TABLE wehe_replays DROP COLUMN reached_time_limit",
                    "ALTER TABLE wehe_tests DROP COLUMN as_number", "ALTER TABLE wehe_tests DROP COLUMN as_name",
                    "ALTER TABLE wehe_tests DROP COLUMN scheduled",
                    "DELETE FROM wehe_schema_migrations WHERE version > 2",
                ])
            let verifying = await #expect(throws: WeheStoreError.self) {
                _ = try await SQLiteFailureTests.open(path, schemaMode: .verify)
            }
            #expect(verifying?.code == .migrationFailed)
            let reopened = try await SQLiteFailureTests.open(path)
            #expect(try await reopened.schemaVersion() == SQLResultStore.latestSchemaVersion)
            let from = Self.midnight(Self.firstDay)
            let to = Self.midnight(Self.firstDay + 5)
            let grouped: [CountDimension] = [.provider, .verdict, .day]
            let inRange = records.filter { $0.metadata.startedAt >= from && $0.metadata.startedAt < to }
            #expect(
                try await reopened.counts(CountQuery(groupBy: grouped, from: from, to: to))
                    == Self.expected(inRange, grouped))
            // Later writes keep it exact.
            let extra = Fixtures.test(count: 99, at: 1_000, verdict: .differentiation, samples: 4)
            try await reopened.save(test: extra)
            #expect(
                try await reopened.counts(CountQuery(groupBy: grouped, from: from, to: to))
                    == Self.expected(inRange + [extra], grouped))
            await reopened.close()
        }
    }
}
