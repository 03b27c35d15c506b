package import Logging

/// Keeps a server running tests while its database is away: writes go straight to the store while it works; when
/// a write fails for a reason that may pass (`WeheStoreError.isRetryable`: connection lost, lock held, disk
/// full) it is queued and retried with back-off by `run()`. When the queue is full, a write is refused with
/// `.queueFull`; a write that fails for a permanent reason is refused with that error. Every queued, refused or
/// finally dropped write is logged with its reason, so nothing disappears silently.
///
/// Order is kept: while anything is queued, new writes join the end of the queue.
package actor BufferedResultWriter {
    private let store: any ResultStore
    private let capacity: Int
    private let retry: RetryPolicy
    private let clock: any Clock<Duration>
    private let logger: Logger
    private var queue: [PendingWrite] = []
    private var head = 0
    private var consecutiveFailures = 0
    /// The last retryable error seen: why writes are waiting.
    package private(set) var lastError: WeheStoreError?
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// Writes refused so far (queue full or permanent error).
    package private(set) var refusedCount = 0
    /// Queued writes given up after a permanent error during a retry.
    package private(set) var droppedCount = 0

    /// Creates a writer for `store` holding at most `capacity` queued writes.
    package init(
        store: any ResultStore,
        capacity: Int = 10_000,
        retry: RetryPolicy = RetryPolicy(),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger
    ) {
        self.store = store
        self.capacity = max(0, capacity)
        self.retry = retry
        self.clock = clock
        self.logger = logger
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Writes waiting in the queue.
    package var pendingCount: Int { queue.count - head }

    /// Writes `write` now, or queues it if the store is away.
    /// - Returns: `.stored` once durable, `.queued` when it waits for the store.
    /// - Throws: `WeheStoreError` `.queueFull` when it cannot be queued, or the store's error when it is
    ///   permanent (the write is then refused and logged).
    package func write(_ write: PendingWrite) async throws(WeheStoreError) -> WriteOutcome {
        if pendingCount > 0 {
            let cause = lastError.map { "; last error: \($0)" } ?? ""
            return try enqueue(write, reason: "earlier writes are still queued\(cause)")
        }
        do {
            try await write.apply(to: store)
            return .stored
        } catch  where error.isRetryable {
            lastError = error
            return try enqueue(write, reason: error.description)
        } catch {
            refusedCount += 1
            logger.error(
                "result refused",
                metadata: ["wehe.store.write": "\(write.summary)", "wehe.store.reason": "\(error)"]
            )
            throw error
        }
    }

    private func enqueue(_ write: PendingWrite, reason: String) throws(WeheStoreError) -> WriteOutcome {
        guard pendingCount < capacity else {
            refusedCount += 1
            logger.error(
                "result refused: queue full",
                metadata: [
                    "wehe.store.write": "\(write.summary)", "wehe.store.capacity": "\(capacity)",
                    "wehe.store.reason": "\(reason)",
                ]
            )
            throw WeheStoreError(
                .queueFull,
                database: store.databaseName,
                "\(write.summary) refused: \(capacity) writes already wait for the database (\(reason))"
            )
        }
        queue.append(write)
        logger.warning(
            "result queued",
            metadata: [
                "wehe.store.write": "\(write.summary)", "wehe.store.pending": "\(pendingCount)",
                "wehe.store.reason": "\(reason)",
            ]
        )
        wake.yield()
        return .queued(depth: pendingCount)
    }

    /// Tries the queued writes once, in order, until one fails for a retryable reason.
    /// - Returns: whether the queue is empty afterwards.
    @discardableResult
    package func drain() async -> Bool {
        while head < queue.count {
            let next = queue[head]
            do {
                try await next.apply(to: store)
                advance()
                consecutiveFailures = 0
            } catch  where error.isRetryable {
                consecutiveFailures += 1
                lastError = error
                logger.warning(
                    "queued result still waiting",
                    metadata: [
                        "wehe.store.write": "\(next.summary)", "wehe.store.pending": "\(pendingCount)",
                        "wehe.store.reason": "\(error)",
                    ]
                )
                return false
            } catch {
                droppedCount += 1
                advance()
                logger.error(
                    "queued result dropped after a permanent error",
                    metadata: ["wehe.store.write": "\(next.summary)", "wehe.store.reason": "\(error)"]
                )
            }
        }
        lastError = nil
        return true
    }

    private func advance() {
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// Retries queued writes with back-off until the task is cancelled. Run it as a long-lived service.
    package func run() async {
        var wakeIterator = wakeups.makeAsyncIterator()
        while !Task.isCancelled {
            if pendingCount == 0 {
                guard await wakeIterator.next() != nil else { return }
                continue
            }
            if await drain() { continue }
            do {
                try await clock.sleep(for: retry.delay(afterFailures: consecutiveFailures))
            } catch {
                return
            }
        }
    }
}
