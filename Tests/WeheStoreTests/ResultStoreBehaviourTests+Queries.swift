import Foundation
import Testing
import WeheCore
import WeheStore

/// The store's queries: a user's history, the crowd stream, export paging and counts.
extension ResultStoreBehaviourTests {
    @Test("a user's history is newest first and pages by history count", arguments: StoreKind.allCases)
    func history(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let mine = (1...5).map {
                Fixtures.test(user: "@me", count: $0, at: Double($0), verdict: .noDifferentiation)
            }
            let theirs = Fixtures.test(user: "@them", count: 3, at: 3)
            try await store.save(tests: mine + [theirs])
            let first = try await store.history(userID: "@me", beforeHistoryCount: nil, limit: 2)
            #expect(first.map(\.key.historyCount) == [5, 4])
            let next = try await store.history(userID: "@me", beforeHistoryCount: 4, limit: 10)
            #expect(next.map(\.key.historyCount) == [3, 2, 1])
            let line = try #require(first.first)
            #expect(line.metadata == Fixtures.stored(mine[4]).metadata)
            #expect(line.analysis == mine[4].analyses[0].summary)
            #expect(line.originalMeanMbps == mine[4].replays[0].samples.meanMbps)
            #expect(line.controlMeanMbps == mine[4].replays[1].samples.meanMbps)
            #expect(try await store.history(userID: "@nobody", beforeHistoryCount: nil, limit: 10).isEmpty)
        }
    }

    @Test(
        "tests of one provider and replay stream page by page, in time order, within the range",
        arguments: StoreKind.allCases)
    func crowdStream(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind, pageSize: 3) { store in
            var records: [TestRecord] = []
            for index in 0..<40 {
                let provider = index % 4 == 0 ? "T-Mobile (cellular)" : "Verizon (cellular)"
                let replay = index % 5 == 0 ? "Netflix-05132024" : "Pandora-05132024"
                // Times go backwards with the index and several tests share a start time.
                records.append(
                    Fixtures.test(
                        user: "@u\(index % 7)", count: index, replay: replay, provider: provider,
                        at: Double((40 - index) / 2 * 60)))
            }
            var incomplete = Fixtures.test(user: "@solo", count: 1, at: 600)
            incomplete.replays.removeLast()
            try await store.save(tests: records + [incomplete])

            let wanted = records.filter {
                $0.metadata.provider == "Verizon (cellular)" && $0.metadata.replayName == "Pandora-05132024"
            }
            var streamed: [CrowdTestRecord] = []
            for try await record in store.crowdTests(
                CrowdQuery(provider: "Verizon (cellular)", replayName: "Pandora-05132024"))
            {
                streamed.append(record)
            }
            #expect(Set(streamed.map(\.key)) == Set(wanted.map(\.key)))
            #expect(streamed.count == wanted.count)
            let times = streamed.map(\.startedAt)
            #expect(times == times.sorted())
            let sample = try #require(streamed.first { $0.key == wanted[0].key })
            #expect(sample.original == wanted[0].replays[0].samples)
            #expect(sample.control == wanted[0].replays[1].samples)
            #expect(sample.originalMeanMbps == wanted[0].replays[0].samples.meanMbps)
            #expect(sample.networkType == "LTE")

            let from = Fixtures.date(300)
            let to = Fixtures.date(900)
            var ranged: [CrowdTestRecord] = []
            for try await record in store.crowdTests(
                CrowdQuery(
                    provider: "Verizon (cellular)", replayName: "Pandora-05132024", from: from, to: to,
                    includeSamples: false)
            ) {
                ranged.append(record)
            }
            let expectedRange = wanted.filter { $0.metadata.startedAt >= from && $0.metadata.startedAt < to }
            #expect(Set(ranged.map(\.key)) == Set(expectedRange.map(\.key)))
            #expect(ranged.allSatisfy { $0.original.count == 0 && $0.control.count == 0 && $0.originalMeanMbps > 0 })

            var none = 0
            for try await _ in store.crowdTests(CrowdQuery(provider: "Nobody", replayName: "Pandora-05132024")) {
                none += 1
            }
            #expect(none == 0)
        }
    }

    @Test("all tests page in full for export, filtered by range and provider", arguments: StoreKind.allCases)
    func exportPaging(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind, pageSize: 4) { store in
            let records = (0..<11).map {
                Fixtures.test(count: $0, provider: $0 < 6 ? "A" : "B", at: Double($0 * 10), verdict: .noDifferentiation)
            }
            try await store.save(tests: records)
            var all: [TestRecord] = []
            for try await record in store.tests(TestFilter()) { all.append(record) }
            #expect(all == records.map { Fixtures.stored($0) })
            var some: [TestRecord] = []
            for try await record in store.tests(
                TestFilter(from: Fixtures.date(20), to: Fixtures.date(90), provider: "B"))
            {
                some.append(record)
            }
            #expect(some.map(\.key.historyCount) == [6, 7, 8])
        }
    }

    @Test("counts group and filter by provider, replay, verdict, day and network type", arguments: StoreKind.allCases)
    func counts(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let providers = ["Verizon (cellular)", "AT&T (cellular)", "Comcast (WiFi)"]
            let replays = ["Pandora-05132024", "Netflix-05132024"]
            let verdicts: [Verdict?] = [.differentiation, .noDifferentiation, nil, .noDifferentiation]
            var records: [TestRecord] = []
            for index in 0..<60 {
                records.append(
                    Fixtures.test(
                        count: index,
                        replay: replays[index % 2],
                        provider: providers[index % 3],
                        network: index % 3 == 2 ? "WIFI" : "LTE",
                        at: Double(index) * 10_000,
                        verdict: verdicts[index % 4]
                    )
                )
            }
            try await store.save(tests: records)

            func expected(_ records: [TestRecord], _ dimensions: Set<CountDimension>) -> [CountRow] {
                var groups: [CountRow: Int] = [:]
                for record in records {
                    let row = CountRow(
                        provider: dimensions.contains(.provider) ? record.metadata.provider : nil,
                        replayName: dimensions.contains(.replay) ? record.metadata.replayName : nil,
                        verdict: dimensions.contains(.verdict) ? record.mainAnalysis?.summary.verdict : nil,
                        day: dimensions.contains(.day) ? record.metadata.startedAt.storeDay : nil,
                        networkType: dimensions.contains(.networkType) ? record.metadata.networkType : nil,
                        count: 0
                    )
                    groups[row, default: 0] += 1
                }
                return groups.map {
                    var row = $0.key
                    row.count = $0.value
                    return row
                }.sorted(by: CountRow.storeOrder)
            }

            let matrix = try await store.counts(CountQuery(groupBy: [.provider, .replay, .verdict]))
            #expect(matrix == expected(records, [.provider, .replay, .verdict]))
            #expect(matrix.reduce(0) { $0 + $1.count } == 60)

            let byDay = try await store.counts(CountQuery(groupBy: [.day, .networkType]))
            #expect(byDay == expected(records, [.day, .networkType]))

            let from = Fixtures.date(100_000)
            let to = Fixtures.date(400_000)
            let filtered = try await store.counts(
                CountQuery(
                    groupBy: [.verdict], from: from, to: to, providers: ["Verizon (cellular)", "Comcast (WiFi)"],
                    replays: ["Pandora-05132024"])
            )
            let subset = records.filter {
                $0.metadata.startedAt >= from && $0.metadata.startedAt < to
                    && ["Verizon (cellular)", "Comcast (WiFi)"].contains($0.metadata.provider ?? "")
                    && $0.metadata.replayName == "Pandora-05132024"
            }
            #expect(!subset.isEmpty)
            #expect(filtered == expected(subset, [.verdict]))

            let onlyDifferentiation = try await store.counts(
                CountQuery(groupBy: [.provider], verdicts: [.differentiation]))
            #expect(
                onlyDifferentiation
                    == expected(records.filter { $0.mainAnalysis?.summary.verdict == .differentiation }, [.provider]))
            #expect(try await store.counts(CountQuery(groupBy: [.provider], providers: [])) == [])
        }
    }
}
