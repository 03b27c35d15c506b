import Foundation
import Logging
import Testing
import WeheCore
import WeheStore

/// A server keeps running tests while its database is away: results are queued or refused with a reason.
@Suite("BufferedResultWriter")
struct BufferedResultWriterTests {
    static func write(_ index: Int) -> PendingWrite {
        let record = Fixtures.test(count: index, at: Double(index))
        return .tests([record])
    }

    @Test("with the store up, writes go straight through")
    func direct() async throws {
        let store = FlakyStore()
        let writer = BufferedResultWriter(store: store, capacity: 2, logger: quietLogger)
        #expect(try await writer.write(Self.write(1)) == .stored)
        #expect(await writer.pendingCount == 0)
        #expect(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 1)) != nil)
    }

    @Test("while the store is unavailable, writes queue up to capacity, then are refused with queueFull")
    func queueThenRefuse() async throws {
        let store = FlakyStore()
        await store.fail(with: .unavailable)
        let writer = BufferedResultWriter(store: store, capacity: 3, logger: quietLogger)
        #expect(try await writer.write(Self.write(0)) == .queued(depth: 1))
        #expect(try await writer.write(Self.write(1)) == .queued(depth: 2))
        #expect(try await writer.write(Self.write(2)) == .queued(depth: 3))
        let error = await #expect(throws: WeheStoreError.self) { _ = try await writer.write(Self.write(3)) }
        #expect(error?.code == .queueFull)
        #expect(error?.database == "flaky")
        #expect(error?.message.contains("injected failure") == true)
        #expect(await writer.refusedCount == 1)
        // Still down: draining keeps everything.
        #expect(await writer.drain() == false)
        #expect(await writer.pendingCount == 3)
        await store.fail(with: nil)
        #expect(await writer.drain() == true)
        #expect(await writer.pendingCount == 0)
        let counts = try await store.counts(CountQuery(groupBy: []))
        #expect(counts == [CountRow(count: 3)])
        #expect(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 3)) == nil)
    }

    @Test("a permanent error refuses the write at once; nothing is queued")
    func permanentError() async throws {
        let store = FlakyStore()
        await store.fail(with: .readOnly)
        let writer = BufferedResultWriter(store: store, capacity: 3, logger: quietLogger)
        let error = await #expect(throws: WeheStoreError.self) { _ = try await writer.write(Self.write(0)) }
        #expect(error?.code == .readOnly)
        #expect(await writer.pendingCount == 0)
        #expect(await writer.refusedCount == 1)
    }

    @Test("order is kept: once something is queued, later writes queue behind it even if the store is back")
    func order() async throws {
        let store = FlakyStore()
        await store.fail(with: .locked)
        let writer = BufferedResultWriter(store: store, capacity: 10, logger: quietLogger)
        let key = TestKey(userID: "@order", historyCount: 1)
        let replay = Fixtures.replay(key, testID: 0, mean: 3)
        #expect(try await writer.write(.replay(replay, Fixtures.metadata())) == .queued(depth: 1))
        await store.fail(with: nil)
        // The analysis needs the replay's test: it must not overtake it.
        #expect(try await writer.write(.analysis(Fixtures.analysis(key, .noDifferentiation))) == .queued(depth: 2))
        #expect(await writer.drain())
        #expect(try await store.test(key)?.mainAnalysis?.summary.verdict == .noDifferentiation)
    }

    @Test("run() retries with exponential back-off until the store is back, then drains the queue")
    func runRetries() async throws {
        let store = FlakyStore()
        await store.fail(with: .unavailable, recoverAfter: 5)
        let clock = RecordingClock()
        let writer = BufferedResultWriter(
            store: store,
            capacity: 10,
            retry: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(300)),
            clock: clock,
            logger: quietLogger
        )
        #expect(try await writer.write(Self.write(0)) == .queued(depth: 1))
        #expect(try await writer.write(Self.write(1)) == .queued(depth: 2))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await writer.run() }
            while await writer.pendingCount > 0 { await Task.yield() }
            group.cancelAll()
        }
        #expect(try await store.counts(CountQuery(groupBy: [])) == [CountRow(count: 2)])
        // First write failed (1), then run(): 4 more failures with back-off 100, 200, 300 (capped), 300 ms.
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(300)])
        #expect(await writer.droppedCount == 0)
    }

    @Test("a queued write that later fails permanently is dropped with a logged reason, the rest continue")
    func droppedAfterPermanentError() async throws {
        let store = FlakyStore()
        await store.fail(with: .unavailable)
        let writer = BufferedResultWriter(store: store, capacity: 10, logger: quietLogger)
        let orphan = AnalysisRecord(
            test: TestKey(userID: "@ghost", historyCount: 1), summary: Fixtures.summary(.blocked), analysedAt: Date())
        #expect(try await writer.write(.analysis(orphan)) == .queued(depth: 1))
        #expect(try await writer.write(Self.write(5)) == .queued(depth: 2))
        await store.fail(with: nil)
        #expect(await writer.drain())
        #expect(await writer.droppedCount == 1)
        #expect(try await store.test(TestKey(userID: "@abc123xyz", historyCount: 5)) != nil)
    }

    @Test("the retry policy grows by its multiplier up to its maximum")
    func retryPolicy() {
        let policy = RetryPolicy(initialDelay: .milliseconds(500), maximumDelay: .seconds(3), multiplier: 2)
        #expect(
            (1...6).map { policy.delay(afterFailures: $0) } == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(3), .seconds(3), .seconds(3),
            ])
    }
}
