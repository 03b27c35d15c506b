import Testing
import WeheCore
import WeheStore

/// Whether the client stopped a replay at the time limit is stored per replay (the nullable
/// `wehe_replays.reached_time_limit` column of migration 6): true, false and unknown read back as written on every
/// backend, so the history can say which verdicts judged only the part of a replay it covered.
@Suite("Replays stopped by the time limit in the store")
struct TimeLimitStoreTests {
    @Test("a replay's time-limit flag round-trips: true, false and unknown", arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await StoreHarness.withStore(kind) { store in
            var record = Fixtures.test(count: 11, at: 200, verdict: .differentiation)
            #expect(record.replays.count == 2)
            record.replays[0].reachedTimeLimit = true
            record.replays[1].reachedTimeLimit = false
            try await store.save(test: record)
            let read = try #require(try await store.test(record.key))
            #expect(read.replay(0)?.reachedTimeLimit == true)
            #expect(read.replay(1)?.reachedTimeLimit == false)
            #expect(read == Fixtures.stored(record))

            // A row that does not know (what the server writes) stays unknown, not "false".
            var unknown = Fixtures.test(count: 12, at: 300, verdict: .noDifferentiation)
            unknown.replays[0].reachedTimeLimit = nil
            try await store.save(test: unknown)
            #expect(try await store.test(unknown.key)?.replay(0)?.reachedTimeLimit == nil)
        }
    }
}
