/// The merge-point queue signal of a WeHeY localization (our extension beside the published
/// verdict): per branch, whether the throttled flow queues on its path and before the two servers' paths merge,
/// from the servers' in-flow and out-of-flow probes (`wehe-server serve --merge-point-probe`), and the signal's
/// verdict. The published verdict and numbers of `LocalizationSummary` do not depend on it.
public struct MergePointQueueSummary: Sendable, Hashable, Codable {
    /// One comparison of in-flow and out-of-flow probe delays (one-sided Mann-Whitney, "in-flow is slower").
    public struct Comparison: Sendable, Hashable, Codable {
        /// One-sided p-value.
        public var pValue: Double
        /// Median in-flow delay minus median out-of-flow delay, seconds.
        public var extraDelay: Double
        /// p below the level and the extra delay at least its threshold.
        public var significant: Bool

        /// Creates a comparison.
        public init(pValue: Double, extraDelay: Double, significant: Bool) {
            self.pValue = pValue
            self.extraDelay = extraDelay
            self.significant = significant
        }
    }

    /// One server's branch.
    public struct Branch: Sendable, Hashable, Codable {
        /// To the merge point (ICMP time exceeded; unanswered in-flow probes count as the timeout).
        public var mergePoint: Comparison
        /// To the client (D-SACK against port unreachable; answered probes only); `nil` without answers.
        public var path: Comparison?
        /// In-flow probes to the merge point.
        public var flowProbes: Int
        /// Of those, unanswered.
        public var flowUnanswered: Int

        /// Creates a branch.
        public init(mergePoint: Comparison, path: Comparison?, flowProbes: Int, flowUnanswered: Int) {
            self.mergePoint = mergePoint
            self.path = path
            self.flowProbes = flowProbes
            self.flowUnanswered = flowUnanswered
        }
    }

    /// Server 1's branch (`nil`: not measured).
    public var first: Branch?
    /// Server 2's branch.
    public var second: Branch?
    /// The signal's verdict: access network (both branches queue on the path, neither before the merge point),
    /// no evidence (a queue or drops before the merge point on a branch), inconclusive otherwise.
    public var verdict: LocalizationVerdict
    /// What was missing, if anything.
    public var note: String?

    /// Creates a summary.
    public init(first: Branch?, second: Branch?, verdict: LocalizationVerdict, note: String? = nil) {
        self.first = first
        self.second = second
        self.verdict = verdict
        self.note = note
    }
}
