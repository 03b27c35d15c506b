import Foundation
import Logging
import Testing
import WeheServer
import WeheStore

/// `serve --retention-days`: the server's purger deletes what is older than the retention, at start
/// and then at every interval, and keeps what is newer.
@Suite("Retention", .timeLimit(.minutes(5)))
struct RetentionTests {
    static func details(_ store: InMemoryResultStore) async throws -> [String] {
        try await store.sessionEvents(SessionEventQuery()).map(\.detail).sorted()
    }

    @Test("the purger deletes old entries at start and again at each interval, and keeps recent ones")
    func periodicPurge() async throws {
        let store = InMemoryResultStore()
        let now = Date()
        let day: TimeInterval = 86_400
        try await store.append(events: [
            SessionEvent(at: now - 40 * day, kind: .error, detail: "old 1"),
            SessionEvent(at: now - 1 * day, kind: .error, detail: "recent"),
        ])
        let purger = RetentionPurger(
            store: store, days: 30, interval: .milliseconds(50), logger: Logger(label: "retention-test"))
        #expect(abs(RetentionPurger.cutoff(days: 30, now: now).timeIntervalSince(now) + 30 * day) < 1e-6)
        let task = Task { try await purger.run() }
        defer { task.cancel() }
        let clock = ContinuousClock()
        var deadline = clock.now.advanced(by: .seconds(20))
        while try await Self.details(store) != ["recent"], clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await Self.details(store) == ["recent"])
        // Something old that arrives later (an imported record) goes at the next interval.
        try await store.append(event: SessionEvent(at: now - 31 * day, kind: .error, detail: "old 2"))
        deadline = clock.now.advanced(by: .seconds(20))
        while try await Self.details(store) != ["recent"], clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await Self.details(store) == ["recent"])
        task.cancel()
        try await task.value
    }

    @Test("a failed purge is reported as nil and does not throw")
    func failedPurge() async throws {
        let store = InMemoryResultStore()
        await store.close()
        let purger = RetentionPurger(store: store, days: 1, logger: Logger(label: "retention-test"))
        #expect(await purger.purgeOnce() == nil)
    }
}
