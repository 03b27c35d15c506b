import Foundation
import Logging
import Synchronization
import WeheAnalysis
import WeheCore
import WeheStore

/// Runs the per-test analysis (original testID 0 against a compared testID) on stored samples and stores the
/// result. The jackknife generator is seeded from the test key, so the same samples always give the same answer.
///
/// The computation runs on the `scheduler`'s threads (bounded server-wide and per network of the client that
/// uploaded the samples); concurrent requests for the same analysis share one computation.
struct AnalysisRunner: Sendable {
    let store: any ResultStore
    let configuration: DifferentiationConfiguration
    let now: @Sendable () -> Date
    let logger: Logger
    /// The reference-format archive, if any (the decision files).
    var archive: ArchiveWriter? = nil
    /// Where and how many analyses compute at once.
    var scheduler = AnalysisScheduler()
    /// Analyses being computed, by test and compared testID.
    let inFlight = InFlightAnalyses()

    /// The stored analysis of a test, computing and storing it first when both replays are stored but no analysis
    /// is; `nil` when the test or one of its replays is missing.
    /// - Throws: `AnalysisScheduler.Refusal` when the uploading network's or the server's analysis queue is full;
    ///   store and analysis errors.
    func result(for test: TestKey, comparedTestID: Int) async throws -> (TestRecord, AnalysisRecord)? {
        guard let record = try await store.test(test) else { return nil }
        if let existing = record.analyses.first(where: { $0.comparedTestID == comparedTestID }) {
            return (record, existing)
        }
        guard record.replay(0) != nil, record.replay(comparedTestID) != nil else { return nil }
        let task = inFlight.task(for: "\(test)/\(comparedTestID)") {
            try await compute(test: test, comparedTestID: comparedTestID)
        }
        guard let (updated, analysis) = try await task.value else { return nil }
        var answer = updated
        if !answer.analyses.contains(where: { $0.comparedTestID == comparedTestID }) {
            answer.analyses.append(analysis)
        }
        return (answer, analysis)
    }

    /// `result(for:comparedTestID:)`, waiting at most `limit` for a computation: `nil` also when it is not done by
    /// then (it goes on, and a later call gets its stored result) or when the analysis queue refused it.
    func result(
        for test: TestKey, comparedTestID: Int, waitingAtMost limit: Duration
    ) async throws -> (TestRecord, AnalysisRecord)? {
        typealias Outcome = Result<(TestRecord, AnalysisRecord)?, any Error>
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let answer = ResumeOnce(continuation)
            Task {
                do {
                    answer.resume(.success(try await self.result(for: test, comparedTestID: comparedTestID)))
                } catch {
                    answer.resume(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                answer.resume(.success(nil))
            }
        }
        do {
            return try outcome.get()
        } catch let refusal as AnalysisScheduler.Refusal {
            logger.notice("analysis deferred", metadata: ["wehe.test": "\(test)", "wehe.reason": "\(refusal)"])
            return nil
        }
    }

    /// Computes, stores and archives one analysis (the part shared by concurrent callers).
    private func compute(test: TestKey, comparedTestID: Int) async throws -> (TestRecord, AnalysisRecord)? {
        // Read again: an earlier computation may have stored it since the caller looked.
        guard let record = try await store.test(test) else { return nil }
        if let existing = record.analyses.first(where: { $0.comparedTestID == comparedTestID }) {
            return (record, existing)
        }
        guard let original = record.replay(0), let compared = record.replay(comparedTestID) else { return nil }
        let analyzer = try DifferentiationAnalyzer(configuration: configuration)
        let seed = Self.seed(test: test, comparedTestID: comparedTestID)
        let network = AddressText.network(record.metadata.clientAddress ?? "unknown")
        let started = ContinuousClock.now
        let statistics = try await scheduler.run(network: network) {
            try analyzer.statistics(original: original.samples, control: compared.samples, seed: seed)
        }
        let elapsed = ContinuousClock.now - started
        let summary = analyzer.summary(for: statistics)
        let analysis = AnalysisRecord(
            test: test, comparedTestID: comparedTestID, summary: summary, analysedAt: now())
        try await store.save(analysis: analysis)
        archive?.archive(decisionOf: test, comparedTestID: comparedTestID, statistics: statistics)
        logger.info(
            "test analysed",
            metadata: [
                "wehe.test": "\(test)", "wehe.verdict": "\(summary.verdict.rawValue)",
                "wehe.area": "\(summary.areaTest)", "wehe.ks.p": "\(summary.ksPValue)",
                "wehe.samples": "\(original.samples.count),\(compared.samples.count)",
                "wehe.analysis.ms": "\(Self.milliseconds(elapsed))",
            ]
        )
        var updated = record
        updated.analyses.append(analysis)
        return (updated, analysis)
    }

    /// A duration in whole milliseconds (for the log).
    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// FNV-1a 64 of `userID/historyCount/testID`: a stable seed per test.
    static func seed(test: TestKey, comparedTestID: Int) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(test.userID)/\(test.historyCount)/\(comparedTestID)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// The analyses being computed, so that concurrent requests for one share its computation.
final class InFlightAnalyses: Sendable {
    typealias Computation = Task<(TestRecord, AnalysisRecord)?, any Error>
    private let tasks = Mutex<[String: Computation]>([:])

    /// The running computation of `key`, or a new one running `work` (removed from the table when it ends).
    func task(
        for key: String, _ work: @escaping @Sendable () async throws -> (TestRecord, AnalysisRecord)?
    ) -> Computation {
        tasks.withLock { tasks in
            if let running = tasks[key] { return running }
            let task = Computation {
                defer { self.tasks.withLock { _ = $0.removeValue(forKey: key) } }
                return try await work()
            }
            tasks[key] = task
            return task
        }
    }

    /// How many computations run now.
    var count: Int { tasks.withLock { $0.count } }
}

/// Resumes a continuation once: the first of several racing callers wins, the others do nothing.
private final class ResumeOnce<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(_ value: Value) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
