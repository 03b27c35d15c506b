import Foundation
import Testing
import WeheCore
import WeheStore

/// The behaviour every `ResultStore` shares, run against the in-memory store, SQLite and PostgreSQL.
@Suite("ResultStore behaviour")
struct ResultStoreBehaviourTests {
    @Test("a test written replay by replay reads back in full", arguments: StoreKind.allCases)
    func replayByReplayRoundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@awkieqk75", historyCount: 7)
            let original = Fixtures.replay(key, testID: 0, mean: 2)
            let control = Fixtures.replay(key, testID: 1, mean: 8)
            try await store.save(replay: original, metadata: Fixtures.metadata())
            try await store.save(replay: control, metadata: Fixtures.metadata())
            let analysis = Fixtures.analysis(key, .differentiation)
            try await store.save(analysis: analysis)

            let read = try #require(try await store.test(key))
            let expected = Fixtures.stored(
                TestRecord(key: key, metadata: Fixtures.metadata(), replays: [original, control], analyses: [analysis])
            )
            #expect(read == expected)
            #expect(read.metadata.clientAddress == "198.51.100.0/24")
            #expect(read.replay(0)?.samples == original.samples)
            #expect(try await store.test(TestKey(userID: "@awkieqk75", historyCount: 8)) == nil)
        }
    }

    @Test(
        "the start time follows the original replay; missing metadata keeps earlier values",
        arguments: StoreKind.allCases)
    func startTimeAndMetadataMerge(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@u1", historyCount: 1)
            try await store.save(replay: Fixtures.replay(key, testID: 1, mean: 8), metadata: Fixtures.metadata(at: 100))
            var sparse = Fixtures.metadata(at: 130, provider: nil, network: nil, address: nil)
            sparse.clientVersion = "4.0.0"
            try await store.save(replay: Fixtures.replay(key, testID: 0, mean: 2), metadata: sparse)
            let read = try #require(try await store.test(key))
            #expect(read.metadata.startedAt == Fixtures.date(130).storeRounded)
            #expect(read.metadata.provider == "Verizon (cellular)")
            #expect(read.metadata.networkType == "LTE")
            #expect(read.metadata.clientAddress == "198.51.100.0/24")
            #expect(read.metadata.clientVersion == "4.0.0")
            #expect(read.replays.map(\.key.testID) == [0, 1])

            // A later control replay does not move the start time again.
            try await store.save(replay: Fixtures.replay(key, testID: 1, mean: 9), metadata: Fixtures.metadata(at: 500))
            #expect(try await store.test(key)?.metadata.startedAt == Fixtures.date(130).storeRounded)
        }
    }

    /// An original (2 Mbit/s) and a control (8 Mbit/s) replay of `key`, and their analysis with `verdict`.
    private static func saveAnalysedTest(_ key: TestKey, _ verdict: Verdict, in store: any ResultStore) async throws {
        try await store.save(replay: Fixtures.replay(key, testID: 0, mean: 2), metadata: Fixtures.metadata())
        try await store.save(replay: Fixtures.replay(key, testID: 1, mean: 8), metadata: Fixtures.metadata())
        try await store.save(analysis: Fixtures.analysis(key, verdict))
    }

    @Test(
        "a new replay for an analysed test replaces its samples and drops the stale analysis",
        arguments: StoreKind.allCases)
    func confirmationReplacesReplay(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@u2", historyCount: 3)
            try await Self.saveAnalysedTest(key, .inconclusive, in: store)
            #expect(
                try await store.counts(CountQuery(groupBy: [.verdict])) == [CountRow(verdict: .inconclusive, count: 1)])

            var rerun = Fixtures.replay(key, testID: 0, mean: 5, at: 600)
            rerun.samples = ThroughputSeries(mbps: [5, 6, 0, 7], interval: 0.1)
            try await store.save(replay: rerun, metadata: Fixtures.metadata(at: 600))
            let read = try #require(try await store.test(key))
            #expect(read.analyses.isEmpty)
            #expect(read.replay(0)?.samples == rerun.samples)
            #expect(read.replays.count == 2)
            #expect(try await store.counts(CountQuery(groupBy: [.verdict])) == [CountRow(verdict: nil, count: 1)])
            let history = try await store.history(userID: "@u2", beforeHistoryCount: nil, limit: 10)
            #expect(history.first?.originalMeanMbps == 4.5)
            #expect(history.first?.analysis == nil)

            try await store.save(analysis: Fixtures.analysis(key, .differentiation))
            #expect(try await store.test(key)?.mainAnalysis?.summary.verdict == .differentiation)
        }
    }

    @Test(
        "a later replay of a test (a DPI probe, testID 2) drops only its own comparison; the verdict stays",
        arguments: StoreKind.allCases)
    func probeKeepsVerdict(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@u2probe", historyCount: 4)
            try await Self.saveAnalysedTest(key, .differentiation, in: store)
            try await store.save(replay: Fixtures.replay(key, testID: 2, mean: 7), metadata: Fixtures.metadata())
            var probe = Fixtures.analysis(key, .noDifferentiation)
            probe.comparedTestID = 2
            try await store.save(analysis: probe)

            // The probe is played again: its comparison read the old samples, the verdict did not.
            try await store.save(
                replay: Fixtures.replay(key, testID: 2, mean: 6, at: 700), metadata: Fixtures.metadata())
            // A new probe: no analysis of it yet, nothing else changes.
            try await store.save(
                replay: Fixtures.replay(key, testID: 3, mean: 7, at: 800), metadata: Fixtures.metadata())
            let read = try #require(try await store.test(key))
            #expect(read.analyses.map(\.comparedTestID) == [1])
            #expect(read.mainAnalysis?.summary.verdict == .differentiation)
            #expect(read.replays.map(\.key.testID) == [0, 1, 2, 3])
            #expect(
                try await store.counts(CountQuery(groupBy: [.verdict])) == [
                    CountRow(verdict: .differentiation, count: 1)
                ])

            // A new control replaces what the verdict read.
            try await store.save(
                replay: Fixtures.replay(key, testID: 1, mean: 9, at: 900), metadata: Fixtures.metadata())
            #expect(try await store.test(key)?.analyses.isEmpty == true)
            #expect(try await store.counts(CountQuery(groupBy: [.verdict])) == [CountRow(verdict: nil, count: 1)])
        }
    }

    @Test("an analysis of a test that is not stored is refused as not found", arguments: StoreKind.allCases)
    func analysisNeedsTest(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@nobody", historyCount: 1)
            let error = await #expect(throws: WeheStoreError.self) {
                try await store.save(analysis: Fixtures.analysis(key, .noDifferentiation))
            }
            #expect(error?.code == .notFound)
            #expect(error?.database == store.databaseName)
            #expect(error?.message.contains("@nobody/1") == true)
        }
    }

    @Test(
        "whole tests are written in batches, the last of duplicate keys wins, replacing drops old parts",
        arguments: StoreKind.allCases)
    func batchWrites(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind, batchSize: 50) { store in
            let records = (0..<130).map {
                Fixtures.test(count: $0, at: Double($0), verdict: $0 % 2 == 0 ? .noDifferentiation : nil)
            }
            var duplicate = Fixtures.test(count: 5, at: 5, verdict: .differentiation)
            duplicate.metadata.provider = "AT&T (cellular)"
            try await store.save(tests: records + [duplicate])
            for index in [0, 1, 49, 50, 129] {
                #expect(try await store.test(records[index].key) == Fixtures.stored(records[index]))
            }
            #expect(try await store.test(duplicate.key) == Fixtures.stored(duplicate))

            // Replacing a test with fewer replays and no analysis removes the old ones.
            var replacement = Fixtures.test(count: 0, at: 0)
            replacement.replays.removeLast()
            try await store.save(test: replacement)
            let read = try #require(try await store.test(replacement.key))
            #expect(read.replays.map(\.key.testID) == [0])
            #expect(read.analyses.isEmpty)
            #expect(try await store.counts(CountQuery(groupBy: [])) == [CountRow(count: 130)])
        }
    }

    @Test("malformed records are refused and a batch containing one writes nothing", arguments: StoreKind.allCases)
    func invalidRecords(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let key = TestKey(userID: "@u3", historyCount: 1)
            var nan = Fixtures.replay(key, testID: 0, mean: 2)
            nan.samples.mbps[3] = .nan
            var uneven = Fixtures.replay(key, testID: 0, mean: 2)
            uneven.samples.times.removeLast()
            var negative = Fixtures.replay(key, testID: 0, mean: 2)
            negative.samples.mbps[0] = -1
            let emptyUser = Fixtures.replay(TestKey(userID: "", historyCount: 1), testID: 0, mean: 2)
            for bad in [nan, uneven, negative, emptyUser] {
                let error = await #expect(throws: WeheStoreError.self) {
                    try await store.save(replay: bad, metadata: Fixtures.metadata())
                }
                #expect(error?.code == .invalidRecord)
            }
            var badTest = Fixtures.test(count: 2, at: 0)
            badTest.replays[1].samples.mbps[0] = .infinity
            let batchError = await #expect(throws: WeheStoreError.self) {
                try await store.save(tests: [Fixtures.test(count: 1, at: 0), badTest])
            }
            #expect(batchError?.code == .invalidRecord)
            let total = try await store.counts(CountQuery(groupBy: []))
            #expect(total == [CountRow(count: 0)])
        }
    }

    @Test(
        "samples with uneven times and statistics that are not numbers survive exactly", arguments: StoreKind.allCases)
    func exactValues(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 9, at: 0, verdict: .inconclusive)
            record.replays[0].samples = ThroughputSeries(
                mbps: [0, 1e-300, 3.141592653589793, 0.1 + 0.2], times: [0.12, 0.24, 0.35, 0.36])
            record.replays[1].samples = ThroughputSeries(mbps: [], times: [])
            record.analyses[0].summary.areaTest = .nan
            record.analyses[0].summary.ksPValue = 1
            record.analyses[0].summary.thresholds.ks2Ratio = 0.95
            try await store.save(test: record)
            let read = try #require(try await store.test(record.key))
            #expect(read.replays[0].samples == record.replays[0].samples)
            #expect(read.replays[1].samples.count == 0)
            let summary = try #require(read.mainAnalysis?.summary)
            #expect(summary.areaTest.isNaN)
            #expect(summary.ksPValue == 1)
            #expect(summary.thresholds.ks2Ratio == 0.95)
            #expect(summary.note == "area only")
        }
    }

    @Test("localization runs round-trip, are replaced by key and listed newest first", arguments: StoreKind.allCases)
    func localizations(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var run = LocalizationRun(
                userID: "@y", historyCounts: [11, 12], servers: ["192.0.2.1", "192.0.2.2"],
                replayName: "Netflix-05132024",
                singleServer: "192.0.2.9", singleHistoryCount: 10, requestedAt: Fixtures.date(5)
            )
            try await store.save(localization: run)
            #expect(try await store.localization(userID: "@y", historyCounts: [11, 12])?.summary == nil)
            run.summary = LocalizationSummary(
                mwuStatistic: 4210, mwuPValue: 0.003, simultaneousMeansMbps: [1.5, 1.6], sumMeanMbps: 3.1,
                singleMeanMbps: 3.0,
                intervalSizes: [0.5, 1.0], correlationPValues: [0.01, .nan], averageLoss: [0.02, 0.03],
                verdict: .accessNetwork
            )
            // The merge-point signal travels in the same summary.
            let branch = MergePointQueueSummary.Branch(
                mergePoint: .init(pValue: 0.4, extraDelay: 0.0001, significant: false),
                path: .init(pValue: 0.004, extraDelay: 0.03, significant: true), flowProbes: 8, flowUnanswered: 0)
            run.summary?.mergePointQueue = MergePointQueueSummary(
                first: branch, second: nil, verdict: .inconclusive, note: "no merge-point probes of historyCount 12")
            try await store.save(localization: run)
            let later = LocalizationRun(
                userID: "@y", historyCounts: [13, 14], servers: ["a", "b"], replayName: "Netflix-05132024",
                requestedAt: Fixtures.date(50)
            )
            try await store.save(localization: later)
            let read = try #require(try await store.localization(userID: "@y", historyCounts: [11, 12]))
            #expect(read.summary?.verdict == .accessNetwork)
            #expect(read.summary?.mergePointQueue == run.summary?.mergePointQueue)
            #expect(read.summary?.correlationPValues.first == 0.01)
            #expect(read.summary?.correlationPValues.last?.isNaN == true)
            #expect(read.singleHistoryCount == 10)
            #expect(read.requestedAt == Fixtures.date(5).storeRounded)
            #expect(try await store.localizations(userID: "@y").map(\.historyCounts) == [[13, 14], [11, 12]])
            #expect(try await store.localization(userID: "@y", historyCounts: [1, 2]) == nil)
            let error = await #expect(throws: WeheStoreError.self) {
                try await store.save(
                    localization: LocalizationRun(
                        userID: "@y", historyCounts: [1], servers: ["a"], replayName: "x", requestedAt: Date()))
            }
            #expect(error?.code == .invalidRecord)
        }
    }

    @Test(
        "the session log keeps anonymised entries, newest first, filtered and counted by kind",
        arguments: StoreKind.allCases)
    func sessionLog(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            let events = (0..<9).map { index in
                SessionEvent(
                    at: Fixtures.date(Double(index)),
                    kind: index % 3 == 0 ? .admissionDenied : .admissionGranted,
                    userID: "@s\(index)",
                    historyCount: index,
                    testID: index % 2,
                    replayName: "Pandora-05132024",
                    clientAddress: "2001:db8:aaaa:bbbb::\(index)",
                    serverName: "replay-1",
                    detail: index % 3 == 0 ? "0;2;100 another client holds this address" : ""
                )
            }
            try await store.append(events: events)
            try await store.append(
                event: SessionEvent(at: Fixtures.date(100), kind: .error, detail: "side channel reset"))
            let latest = try await store.sessionEvents(SessionEventQuery(limit: 3))
            #expect(latest.map(\.kind) == [.error, .admissionGranted, .admissionGranted])
            #expect(latest[1].clientAddress == "2001:db8:aaaa::/48")
            #expect(latest[1].userID == "@s8")
            let denied = try await store.sessionEvents(
                SessionEventQuery(from: Fixtures.date(1), to: Fixtures.date(7), kinds: [.admissionDenied]))
            #expect(denied.map(\.historyCount) == [6, 3])
            #expect(denied.first?.detail == "0;2;100 another client holds this address")
            let counts = try await store.sessionEventCounts(from: nil, to: Fixtures.date(50))
            #expect(
                counts == [
                    SessionEventCount(kind: .admissionDenied, count: 3),
                    SessionEventCount(kind: .admissionGranted, count: 6),
                ])
        }
    }

    @Test(
        "client addresses are kept as configured: custom prefixes or, when asked for, in full",
        arguments: StoreKind.allCases)
    func anonymisationPolicy(kind: StoreKind) async throws {
        let wide = try AnonymizationPolicy(ipv4PrefixLength: 16, ipv6PrefixLength: 32)
        try await StoreHarness.withStore(kind, anonymization: wide) { store in
            let key = TestKey(userID: "@p", historyCount: 1)
            try await store.save(
                replay: Fixtures.replay(key, testID: 0, mean: 1), metadata: Fixtures.metadata(address: "203.0.113.200"))
            #expect(try await store.test(key)?.metadata.clientAddress == "203.0.0.0/16")
            try await store.save(
                replay: Fixtures.replay(key, testID: 0, mean: 1), metadata: Fixtures.metadata(address: "not an address")
            )
            #expect(try await store.test(key)?.metadata.clientAddress == "203.0.0.0/16")
        }
        let full = try AnonymizationPolicy(storeFullAddress: true)
        try await StoreHarness.withStore(kind, anonymization: full) { store in
            let key = TestKey(userID: "@p", historyCount: 2)
            try await store.save(
                replay: Fixtures.replay(key, testID: 0, mean: 1),
                metadata: Fixtures.metadata(address: "[2001:DB8::0:1]"))
            #expect(try await store.test(key)?.metadata.clientAddress == "2001:db8::1")
        }
    }

    @Test("a closed store refuses further work", arguments: StoreKind.allCases)
    func closed(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            await store.close()
            let error = await #expect(throws: WeheStoreError.self) {
                _ = try await store.test(TestKey(userID: "@c", historyCount: 1))
            }
            #expect(error?.code == .closed)
        }
    }
}
