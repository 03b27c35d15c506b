public import WeheCore

/// When a test must be run a second time before its verdict is shown (analysis.md section 2.5, protocol.md
/// section 13).
///
/// A first result of `differentiation` or `inconclusive` triggers exactly one confirmation run: a complete new test
/// (both replays). The confirmation's verdict replaces the first one; the two are not combined. A `blocked` port
/// result counts as differentiation (the clients report it as such), so it is confirmed too. Localization (WeHeY)
/// runs never trigger a confirmation.
public struct ConfirmationRule: Sendable, Hashable, Codable {
    /// Whether confirmation runs are enabled (the clients' default).
    public var enabled: Bool

    /// Creates the rule.
    public init(enabled: Bool = true) {
        self.enabled = enabled
    }

    /// Whether a test that ended with `verdict` must be followed by a confirmation run.
    /// - Parameters:
    ///   - verdict: the verdict of the run that just ended.
    ///   - isConfirmation: whether that run already was the confirmation (at most one confirmation).
    ///   - isLocalization: whether the run belongs to a localization (no confirmation there).
    public func needsConfirmation(after verdict: Verdict, isConfirmation: Bool, isLocalization: Bool = false) -> Bool {
        guard enabled, !isConfirmation, !isLocalization else { return false }
        switch verdict {
        case .differentiation, .inconclusive, .blocked:
            return true
        case .noDifferentiation:
            return false
        }
    }
}
