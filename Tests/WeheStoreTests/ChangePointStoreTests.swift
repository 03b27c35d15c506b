import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// The change in time within a test is stored inside the sensitive verdict's JSON (the nullable
/// `wehe_tests.sensitive` column of migration 5, no new migration): read back exactly on every backend, infinite
/// interval bounds included, and a payload written before it existed still decodes (no `changePoint` key: `nil`).
@Suite("Change points in the store")
struct ChangePointStoreTests {
    static func change() -> ChangePointSummary {
        ChangePointSummary(
            found: true, kind: .stops, pValue: 2.0 / 1024, alpha: 0.008, rounds: 10, bins: 50, changeMegabytes: 3.06,
            changeSeconds: 0.5204, totalMegabytes: 6.2,
            before: .init(
                startMegabytes: 0, endMegabytes: 3.06, originalSeconds: 0.52, verdict: .differentiation,
                direction: .throttled, pValue: 2.0 / 1024, slowdown: 0.4812, slowdownLower: 0.45, slowdownUpper: 0.5),
            after: .init(
                startMegabytes: 3.06, endMegabytes: 6.2, originalSeconds: 0.3, verdict: .noDifferentiation,
                direction: nil, pValue: 1, slowdown: -0.01, slowdownLower: -.infinity, slowdownUpper: .infinity),
            note: nil)
    }

    static func sensitive() -> SensitiveSummary {
        var summary = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 2.0 / 1024, alpha: 0.008,
            slowdown: 0.31, slowdownLower: 0.3, slowdownUpper: 0.32, confidenceLevel: 0.95,
            originalMeansMbps: [60, 61], controlMeansMbps: [89, 88.5])
        summary.changePoint = change()
        return summary
    }

    @Test("a test's change point round-trips inside its sensitive verdict", arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 9, at: 100, verdict: .differentiation)
            record.sensitive = Self.sensitive()
            try await store.save(test: record)
            let read = try await store.test(record.key)
            #expect(read?.sensitive?.changePoint == Self.change())
            #expect(read?.sensitive?.changePoint?.after?.slowdownUpper == .infinity)
            #expect(read == Fixtures.stored(record))
        }
    }

    /// A sensitive verdict stored before item 3 (its JSON has no `changePoint`) decodes with none.
    @Test func olderPayloadDecodes() throws {
        let old = """
            {"alpha":0.008,"confidenceLevel":0.95,"controlMeansMbps":[40],"originalMeansMbps":[30],"pValue":1,\
            "rounds":1,"slowdown":0.25,"slowdownLower":"-inf","slowdownUpper":"inf","verdict":"inconclusive"}
            """
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let summary = try decoder.decode(SensitiveSummary.self, from: Data(old.utf8))
        #expect(summary.changePoint == nil)
        #expect(summary.rounds == 1)
    }
}
