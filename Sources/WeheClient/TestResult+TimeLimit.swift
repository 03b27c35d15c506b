public import WeheCore
import WeheReplay

/// Replays stopped by the time limit.
///
/// A replay that has not finished when its deadline comes (45 s for TCP app tests, 40 s for UDP, 30 s for port
/// tests; protocol.md 6.1) is stopped there, as every Wehe client does. Its samples end at the deadline, so the
/// published verdict compares what it covered, and the sensitive verdict uses its mean over the covered time.
extension TestResult {
    /// The replays of this result that reached the time limit, original first.
    public var replaysCutShort: [ReplayRole] {
        [(ReplayRole.original, original), (.control, control)].compactMap { role, outcome in
            outcome?.reachedDeadline == true ? role : nil
        }
    }

    /// "the original replay reached the time limit after 45.0 s, having received 3.1 MB: the verdicts judge the part
    /// it covered"; `nil` when every replay finished.
    public var timeLimitNote: String? {
        let parts = [(ReplayRole.original, original), (.control, control)].compactMap {
            role, outcome -> String? in
            guard let outcome, outcome.reachedDeadline else { return nil }
            let seconds = (outcome.duration.inSeconds * 10).rounded() / 10
            let megabytes = (Double(outcome.bytesReceived) / 100_000).rounded() / 10
            return "the \(role == .original ? "original" : "control") replay reached the time limit after "
                + "\(seconds) s, having received \(megabytes) MB"
        }
        guard !parts.isEmpty else { return nil }
        let it = parts.count == 1 ? "it" : "they"
        return parts.joined(separator: "; ") + ": the verdicts judge the part \(it) covered"
    }
}
