import Testing
import WeheCore
import WeheStore

/// Whether the monitor's schedule started a test (the nullable `scheduled` column of migration 8) is stored with the
/// test on every backend, kept when a later replay of the same test does not say it, and absent stays absent.
@Suite("Scheduled tests in the store")
struct ScheduledStoreTests {
    @Test(
        "scheduled round-trips, survives a replay that does not say it, and a person's test stays nil",
        arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 31, at: 400, verdict: .noDifferentiation)
            record.metadata.scheduled = true
            try await store.save(test: record)
            let read = try #require(try await store.test(record.key))
            #expect(read.metadata.scheduled == true)
            #expect(read == Fixtures.stored(record))
            #expect(ResultRecord(record: read, name: nil).scheduled == true)

            var later = record.metadata
            later.scheduled = nil
            try await store.save(replay: record.replays[1], metadata: later)
            #expect(try await store.test(record.key)?.metadata.scheduled == true)

            let person = Fixtures.test(count: 32, at: 500, verdict: .noDifferentiation)
            try await store.save(test: person)
            let plain = try #require(try await store.test(person.key))
            #expect(plain.metadata.scheduled == nil)
        }
    }
}
