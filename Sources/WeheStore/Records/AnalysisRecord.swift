package import Foundation
package import WeheCore

/// The analysis of one test: replay `comparedTestID` against the original (testID 0), with its verdict.
package struct AnalysisRecord: Sendable, Hashable, Codable {
    /// The test analysed.
    package var test: TestKey
    /// The replay compared with the original: 1 for normal tests, ≥ 2 for DPI probes.
    package var comparedTestID: Int
    /// Statistics, verdict and thresholds.
    package var summary: AnalysisSummary
    /// When the analysis ran.
    package var analysedAt: Date

    /// Creates an analysis record.
    package init(test: TestKey, comparedTestID: Int = 1, summary: AnalysisSummary, analysedAt: Date) {
        self.test = test
        self.comparedTestID = comparedTestID
        self.summary = summary
        self.analysedAt = analysedAt
    }
}
