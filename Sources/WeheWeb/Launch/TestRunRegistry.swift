package import Foundation
import WeheCore
package import WeheStore

/// A change to a run, delivered to the run page's event stream.
package enum TestRunUpdate: Sendable, Hashable {
    /// A progress event from the launcher.
    case progress(TestProgressEvent)
    /// The run's state changed.
    case state(TestRun.State)
}

/// The runs started from the browser: accepts launch requests, hands them to `DashboardRunner`, records their
/// progress and fans it out to event-stream subscribers.
package actor TestRunRegistry {
    private var runs: [String: TestRun] = [:]
    private var order: [String] = []
    private var subscribers: [String: [Int: AsyncStream<TestRunUpdate>.Continuation]] = [:]
    private var nextRun = 1
    private var nextSubscriber = 1
    private let pendingContinuation: AsyncStream<String>.Continuation
    /// Run ids waiting to be started, consumed by `DashboardRunner`.
    package nonisolated let pending: AsyncStream<String>
    private let maximumKeptRuns: Int
    private let maximumMessages = 200
    private let maximumSamples = 2_000

    /// Creates an empty registry keeping at most `maximumKeptRuns` finished runs.
    package init(maximumKeptRuns: Int = 50) {
        (pending, pendingContinuation) = AsyncStream.makeStream(of: String.self)
        self.maximumKeptRuns = max(1, maximumKeptRuns)
    }

    /// Records a new run and queues it.
    /// - Throws: `WeheWebError` `.tooManyRuns` while another run is queued or running (tests must not overlap:
    ///   they would share the link and disturb each other's throughput).
    package func enqueue(_ test: LaunchableTest, at date: Date) throws(WeheWebError) -> TestRun {
        try enqueue([test], at: date)
    }

    /// Records a new run of several tests, run one after the other, and queues it.
    /// - Throws: `WeheWebError` `.tooManyRuns` while another run is queued or running; `.invalidParameter` for
    ///   an empty list.
    package func enqueue(_ tests: [LaunchableTest], at date: Date) throws(WeheWebError) -> TestRun {
        guard !tests.isEmpty else { throw WeheWebError(.invalidParameter, "choose a test to run") }
        if let active = order.compactMap({ runs[$0] }).first(where: { !$0.state.isTerminal }) {
            throw WeheWebError(.tooManyRuns, "a test (\(active.test.name)) is already running")
        }
        let run = TestRun(id: "run-\(nextRun)", tests: tests, requestedAt: date)
        nextRun += 1
        runs[run.id] = run
        order.append(run.id)
        trim()
        pendingContinuation.yield(run.id)
        return run
    }

    /// The run with this id, if known.
    package func run(_ id: String) -> TestRun? { runs[id] }

    /// Every kept run, newest first.
    package func allRuns() -> [TestRun] { order.reversed().compactMap { runs[$0] } }

    /// Applies a progress event to a run and forwards it to subscribers.
    package func record(_ event: TestProgressEvent, for id: String) {
        guard var run = runs[id], !run.state.isTerminal else { return }
        switch event {
        case .phase(let phase):
            run.phase = phase
        case .fraction(let value):
            // The launcher reports each test's own progress; the run's is the share of all its tests.
            let overall = (Double(run.current) + min(1, max(0, value))) / Double(run.tests.count)
            if value.isFinite { run.fraction = min(1, max(run.fraction, overall)) }
        case .sample(let role, let seconds, let mbps):
            guard seconds.isFinite, mbps.isFinite, mbps >= 0 else { return }
            var list = run.samples[role] ?? []
            list.append((seconds, mbps))
            if list.count > maximumSamples { list.removeFirst(list.count - maximumSamples) }
            run.samples[role] = list
        case .message(let text):
            run.messages.append(text)
            if run.messages.count > maximumMessages { run.messages.removeFirst(run.messages.count - maximumMessages) }
        }
        runs[id] = run
        broadcast(.progress(event), to: id)
    }

    /// Marks test `index` of a run as the one running (the next test of a run of several).
    package func startTest(_ index: Int, for id: String) {
        guard var run = runs[id], !run.state.isTerminal, run.tests.indices.contains(index) else { return }
        run.current = index
        run.phase = nil
        // The live chart shows the test that is running.
        if index > 0 { run.samples = [:] }
        runs[id] = run
    }

    /// Records the key under which one test of a run was stored.
    package func addResult(_ key: TestKey, for id: String) {
        guard var run = runs[id], !run.state.isTerminal else { return }
        run.results.append(key)
        runs[id] = run
    }

    /// Changes a run's state and forwards it; a terminal state ends the subscribers' streams.
    package func setState(_ state: TestRun.State, for id: String) {
        guard var run = runs[id], !run.state.isTerminal else { return }
        run.state = state
        if case .finished = state { run.fraction = 1 }
        runs[id] = run
        broadcast(.state(state), to: id)
        if state.isTerminal {
            for continuation in (subscribers.removeValue(forKey: id) ?? [:]).values { continuation.finish() }
        }
    }

    /// A stream of a run's updates: first a snapshot of its state and past events, then live updates until the
    /// run ends. `nil` for an unknown run.
    package func subscribe(_ id: String) -> AsyncStream<TestRunUpdate>? {
        guard let run = runs[id] else { return nil }
        let (stream, continuation) = AsyncStream.makeStream(
            of: TestRunUpdate.self, bufferingPolicy: .bufferingNewest(4_096))
        continuation.yield(.state(run.state))
        if let phase = run.phase { continuation.yield(.progress(.phase(phase))) }
        continuation.yield(.progress(.fraction(run.fraction)))
        for (role, samples) in run.samples.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            for sample in samples {
                continuation.yield(.progress(.sample(role, seconds: sample.seconds, mbps: sample.mbps)))
            }
        }
        for message in run.messages { continuation.yield(.progress(.message(message))) }
        if run.state.isTerminal {
            continuation.finish()
            return stream
        }
        let token = nextSubscriber
        nextSubscriber += 1
        subscribers[id, default: [:]][token] = continuation
        return stream
    }

    /// Ends the queue of pending runs (the runner stops taking new ones).
    package func closeQueue() {
        pendingContinuation.finish()
    }

    /// Sends an update to a run's subscribers, forgetting those whose reader went away.
    private func broadcast(_ update: TestRunUpdate, to id: String) {
        guard let current = subscribers[id] else { return }
        for (token, continuation) in current {
            if case .terminated = continuation.yield(update) { subscribers[id]?[token] = nil }
        }
    }

    private func trim() {
        while order.count > maximumKeptRuns, let index = order.firstIndex(where: { runs[$0]?.state.isTerminal ?? true })
        {
            runs[order[index]] = nil
            order.remove(at: index)
        }
    }
}
