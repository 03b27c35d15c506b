import Foundation
import Testing
import WeheCore
import WeheStore
import WeheStoreSQL

/// The sensitive verdict of an interleaved test on every backend: stored with its test, read back
/// exactly (infinite interval bounds included), cleared when the test is rewritten without one, gone with a purge.
@Suite("Sensitive verdicts in the store")
struct SensitiveStoreTests {
    static func sensitive(lower: Double = 0.12) -> SensitiveSummary {
        var summary = SensitiveSummary(
            verdict: .differentiation, direction: .throttled, rounds: 10, pValue: 2.0 / 1024, alpha: 0.008,
            slowdown: 0.18, slowdownLower: lower, slowdownUpper: 0.24, confidenceLevel: 0.95,
            originalMeansMbps: [30.5, 31, 29.25], controlMeansMbps: [40, 39.5, 41.125],
            note: nil)
        summary.durationSeconds = 14.5
        summary.bytesReceived = 123_456_789
        return summary
    }

    @Test("a test's sensitive verdict round-trips, is cleared by a rewrite and purged", arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 7, at: 100, verdict: .noDifferentiation)
            record.sensitive = Self.sensitive()
            try await store.save(test: record)
            #expect(try await store.test(record.key) == Fixtures.stored(record))
            var unbounded = record
            unbounded.sensitive = Self.sensitive(lower: -.infinity)
            unbounded.sensitive?.verdict = .inconclusive
            unbounded.sensitive?.direction = nil
            unbounded.sensitive?.note = "too few rounds (3)"
            try await store.save(test: unbounded)
            let read = try await store.test(record.key)
            #expect(read?.sensitive == unbounded.sensitive)
            #expect(read?.sensitive?.slowdownLower == -.infinity)
            var plain = record
            plain.sensitive = nil
            try await store.save(test: plain)
            #expect(try await store.test(record.key)?.sensitive == nil)
            // A second test keeps its own; the first stays without.
            var other = Fixtures.test(count: 8, at: 200, verdict: .differentiation)
            other.sensitive = Self.sensitive()
            try await store.save(tests: [plain, other])
            #expect(try await store.test(other.key)?.sensitive == other.sensitive)
            #expect(try await store.test(plain.key)?.sensitive == nil)
            _ = try await store.purge(before: Fixtures.date(1_000))
            #expect(try await store.test(other.key) == nil)
        }
    }

    @Test(
        "a user's history carries each test's sensitive verdict, nil for tests without", arguments: StoreKind.allCases)
    func history(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var interleaved = Fixtures.test(count: 3, at: 100, verdict: .noDifferentiation)
            interleaved.sensitive = Self.sensitive(lower: -.infinity)
            let plain = Fixtures.test(count: 4, at: 200, verdict: .differentiation)
            try await store.save(tests: [interleaved, plain])
            let rows = try await store.history(
                userID: interleaved.key.userID, beforeHistoryCount: nil, limit: 10)
            #expect(rows.map(\.key.historyCount) == [4, 3])
            #expect(rows.first { $0.key == interleaved.key }?.sensitive == interleaved.sensitive)
            #expect(rows.first { $0.key == plain.key }.map { $0.sensitive == nil } == true)
        }
    }
}
