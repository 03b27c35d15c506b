public import WeheCore

/// The confirmation rule as a state machine for a test runner: feed it each run's summary, it says whether to run
/// again or which summary is final.
public struct ConfirmationFlow: Sendable, Hashable, Codable {
    /// What the runner has to do next.
    public enum Step: Sendable, Hashable, Codable {
        /// Run a (new) complete test; `isConfirmation` is true for the second run.
        case runTest(isConfirmation: Bool)
        /// Done: `final` is the summary to save and show; `discarded` is the first run's summary when a
        /// confirmation replaced it.
        case finished(final: AnalysisSummary, discarded: AnalysisSummary?)
    }

    /// The rule in force.
    public let rule: ConfirmationRule
    /// Whether this test is part of a localization (never confirmed).
    public let isLocalization: Bool
    /// The current step.
    public private(set) var step: Step = .runTest(isConfirmation: false)
    private var first: AnalysisSummary?

    /// Starts a flow: the first step is always `.runTest(isConfirmation: false)`.
    public init(rule: ConfirmationRule = ConfirmationRule(), isLocalization: Bool = false) {
        self.rule = rule
        self.isLocalization = isLocalization
    }

    /// Records the summary of the run the flow asked for and returns the next step.
    /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` if the flow has already finished.
    @discardableResult
    public mutating func record(_ summary: AnalysisSummary) throws(WeheAnalysisError) -> Step {
        guard case .runTest(let isConfirmation) = step else {
            throw WeheAnalysisError(.invalidConfiguration, "the confirmation flow has already finished")
        }
        let again = rule.needsConfirmation(
            after: summary.verdict, isConfirmation: isConfirmation, isLocalization: isLocalization)
        if again {
            first = summary
            step = .runTest(isConfirmation: true)
        } else {
            step = .finished(final: summary, discarded: first)
        }
        return step
    }
}
