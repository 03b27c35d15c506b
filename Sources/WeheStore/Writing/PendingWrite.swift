/// One write for a `ResultStore`, as held by `BufferedResultWriter` while the database is away.
package enum PendingWrite: Sendable, Hashable {
    /// `ResultStore.save(replay:metadata:)`.
    case replay(ReplayRecord, TestMetadata)
    /// `ResultStore.save(analysis:)`.
    case analysis(AnalysisRecord)
    /// `ResultStore.save(tests:)`.
    case tests([TestRecord])
    /// `ResultStore.save(localization:)`.
    case localization(LocalizationRun)
    /// `ResultStore.append(events:)`.
    case events([SessionEvent])

    /// Performs the write on `store`.
    package func apply(to store: any ResultStore) async throws(WeheStoreError) {
        switch self {
        case .replay(let replay, let metadata): try await store.save(replay: replay, metadata: metadata)
        case .analysis(let analysis): try await store.save(analysis: analysis)
        case .tests(let tests): try await store.save(tests: tests)
        case .localization(let run): try await store.save(localization: run)
        case .events(let events): try await store.append(events: events)
        }
    }

    /// A short description for logs (keys only, never addresses or samples).
    package var summary: String {
        switch self {
        case .replay(let replay, _): "replay \(replay.key)"
        case .analysis(let analysis): "analysis \(analysis.test) testID \(analysis.comparedTestID)"
        case .tests(let tests): "\(tests.count) test(s)" + (tests.first.map { " from \($0.key)" } ?? "")
        case .localization(let run): "localization \(run.userID) \(run.historyCounts)"
        case .events(let events): "\(events.count) session event(s)"
        }
    }
}

/// What became of a write handed to `BufferedResultWriter`.
package enum WriteOutcome: Sendable, Hashable {
    /// Written to the store (durable).
    case stored
    /// The store was unavailable; the write waits in the queue at this depth and will be retried.
    case queued(depth: Int)
}

/// How `BufferedResultWriter` retries: exponential back-off between attempts.
package struct RetryPolicy: Sendable, Hashable {
    /// Wait after the first failure.
    package var initialDelay: Duration
    /// Upper bound of the wait.
    package var maximumDelay: Duration
    /// Factor applied to the wait after each failure.
    package var multiplier: Double

    /// Creates a policy (defaults: 0.5 s, doubling, at most 30 s).
    package init(
        initialDelay: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(30),
        multiplier: Double = 2
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = max(initialDelay, maximumDelay)
        self.multiplier = max(1, multiplier)
    }

    /// The wait after `failures` consecutive failures (1 = first).
    package func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        var step = 1
        while step < failures, delay < maximumDelay {
            delay = delay * multiplier
            step += 1
        }
        return min(delay, maximumDelay)
    }
}
