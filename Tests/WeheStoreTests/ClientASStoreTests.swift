import Testing
import WeheCore
import WeheStore

/// The AS of the client's address (the nullable `as_number` and `as_name` columns of migration 7) is stored with
/// each test on every backend, kept when a later replay of the same test does not know it, and absent stays absent.
@Suite("Client AS in the store")
struct ClientASStoreTests {
    @Test(
        "AS number and name round-trip, survive a replay that brings none, and unknown stays nil",
        arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 21, at: 400, verdict: .noDifferentiation)
            record.metadata.asNumber = 4_200_000_000
            record.metadata.asName = "Loopback Test Net"
            record.metadata.provider = "Loopback Test Net (AS4200000000)"
            try await store.save(test: record)
            let read = try #require(try await store.test(record.key))
            #expect(read.metadata.asNumber == 4_200_000_000)
            #expect(read.metadata.asName == "Loopback Test Net")
            #expect(read == Fixtures.stored(record))

            // The server writes replay by replay: a control replay's metadata without an AS keeps the stored one.
            var later = record.metadata
            later.asNumber = nil
            later.asName = nil
            try await store.save(replay: record.replays[1], metadata: later)
            let merged = try #require(try await store.test(record.key))
            #expect(merged.metadata.asNumber == 4_200_000_000 && merged.metadata.asName == "Loopback Test Net")

            let unknown = Fixtures.test(count: 22, at: 500, verdict: .noDifferentiation)
            try await store.save(test: unknown)
            let plain = try #require(try await store.test(unknown.key))
            #expect(plain.metadata.asNumber == nil && plain.metadata.asName == nil)
        }
    }
}
