import Foundation
import Logging
import WeheAnalysis
import WeheCore
import WeheStore

/// Runs the per-test analysis (original testID 0 against a compared testID) on stored samples and stores the
/// result. The jackknife generator is seeded from the test key, so the same samples always give the same answer.
struct AnalysisRunner: Sendable {
    let store: any ResultStore
    let configuration: DifferentiationConfiguration
    let now: @Sendable () -> Date
    let logger: Logger
    /// The reference-format archive, if any (the decision files).
    var archive: ArchiveWriter? = nil

    /// The stored analysis of a test, computing and storing it first when both replays are stored but no analysis
    /// is; `nil` when the test or one of its replays is missing.
    func result(for test: TestKey, comparedTestID: Int) async throws -> (TestRecord, AnalysisRecord)? {
        guard let record = try await store.test(test) else { return nil }
        if let existing = record.analyses.first(where: { $0.comparedTestID == comparedTestID }) {
            return (record, existing)
        }
        guard let original = record.replay(0), let compared = record.replay(comparedTestID) else { return nil }
        let analyzer = try DifferentiationAnalyzer(configuration: configuration)
        let statistics = try analyzer.statistics(
            original: original.samples,
            control: compared.samples,
            seed: Self.seed(test: test, comparedTestID: comparedTestID)
        )
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
            ]
        )
        var updated = record
        updated.analyses.append(analysis)
        return (updated, analysis)
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
