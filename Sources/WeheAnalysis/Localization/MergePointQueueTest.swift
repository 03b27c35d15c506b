public import WeheCore
import WeheStatistics

/// An additional WeHeY signal beside the published tests (not part of analysis.md section 6): does
/// the throttled flow queue on its path, and if so, before or after the point where the two servers' paths merge?
///
/// The published tests see a limiter that the two simultaneous replays share (their summed throughput, their
/// correlated losses). A per-flow shaper on the shared segment gives each replay its own queue and rate, which from
/// the endpoints looks like one throttler on each branch, and the published verdict says "no evidence". What still
/// differs is *where* each flow queues. Each server probes its replay connection with copies of its own data
/// segments, and compares them with out-of-flow datagrams sent at the same time:
///
/// * **to the merge point**: copies whose TTL runs out at the merge point (the first router both paths share; ICMP
///   time exceeded answers) against datagrams with the same TTL. A throttler on the branch queues (or drops) the
///   in-flow copies before the merge point. An unanswered copy counts as the prober's timeout (longer than any
///   answer): a drop before the merge point is evidence of a branch throttler, the direction that never accuses the
///   access network.
/// * **to the client**: copies with the segment's own TTL, which reach the client as duplicates and are answered at
///   once by a D-SACK, against datagrams to a closed port of the client (port unreachable). A queue that only the
///   classified flow meets, anywhere on the path, delays the copies. Unanswered probes are left out here: counted as
///   long delays they would be evidence of a queue, the direction that accuses the access network.
///
/// Each comparison is a one-sided Mann-Whitney U ("in-flow delays are larger", normal approximation with tie and
/// continuity corrections) with p < `alpha` and a difference of medians of at least `mergePointExtraDelay` (1 ms) or
/// `pathExtraDelay` (5 ms). The signal says "access network" only when both servers' replays showed differentiation
/// (the published gate), on both branches the flow queues on its path but not before the merge point, and each branch
/// has at least `minimumProbes` in-flow probes to the merge point. A queue before the merge point on either branch
/// gives "no evidence"; anything else, such as policers that drop without queueing, is inconclusive.
///
/// Measured so far by the prototype `scripts/wehey_probe.py` on the kernel Y testbed (Docs/testbed.md, "WeHeY's
/// blind spot"); the servers do not send these probes yet.
public enum MergePointQueueTest {
    /// Thresholds of the test.
    public struct Configuration: Sendable, Hashable, Codable {
        /// Significance level of each Mann-Whitney test (0.01).
        public var alpha: Double
        /// Smallest difference of medians to the merge point (in-flow − baseline), seconds, that counts as a queue
        /// before it (0.001: low on purpose, it vetoes "access network").
        public var mergePointExtraDelay: Double
        /// Smallest difference of medians to the client, seconds, that counts as a queue on the path (0.005).
        public var pathExtraDelay: Double
        /// In-flow probes to the merge point each branch needs for an "access network" answer (5).
        public var minimumProbes: Int
        /// The delay an unanswered probe to the merge point counts as, seconds (the prober's timeout, 2).
        public var timeout: Double

        /// Creates a configuration with the defaults used on the testbed.
        public init(
            alpha: Double = 0.01, mergePointExtraDelay: Double = 0.001, pathExtraDelay: Double = 0.005,
            minimumProbes: Int = 5, timeout: Double = 2
        ) {
            self.alpha = alpha
            self.mergePointExtraDelay = mergePointExtraDelay
            self.pathExtraDelay = pathExtraDelay
            self.minimumProbes = minimumProbes
            self.timeout = timeout
        }

        /// Checks the values.
        /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending value.
        public func validated() throws(WeheAnalysisError) -> Configuration {
            guard alpha.isFinite, alpha > 0, alpha < 1 else {
                throw WeheAnalysisError(.invalidConfiguration, "alpha must lie in (0, 1), got \(alpha)")
            }
            for (name, value) in [("merge-point", mergePointExtraDelay), ("path", pathExtraDelay)]
            where !(value.isFinite && value >= 0) {
                throw WeheAnalysisError(
                    .invalidConfiguration, "the \(name) extra delay must be finite and ≥ 0, got \(value)")
            }
            guard minimumProbes >= 1 else {
                throw WeheAnalysisError(.invalidConfiguration, "at least one probe is needed, got \(minimumProbes)")
            }
            guard timeout.isFinite, timeout > 0 else {
                throw WeheAnalysisError(.invalidConfiguration, "the timeout must be finite and > 0, got \(timeout)")
            }
            return self
        }
    }

    /// One comparison of in-flow and out-of-flow delays (the stored and displayed type: p-value, extra delay in
    /// seconds, and whether p < alpha with the extra delay at its threshold).
    public typealias Comparison = MergePointQueueSummary.Comparison

    /// One branch's numbers (the stored and displayed type).
    public typealias Branch = MergePointQueueSummary.Branch

    /// Tests one branch.
    /// - Parameters:
    ///   - flowToMergePoint: delay of each in-flow probe to the merge point, seconds; `nil` for no answer.
    ///   - baselineToMergePoint: the same for the out-of-flow probes.
    ///   - flowToClient: delay of each in-flow probe to the client (`nil`: no answer, left out).
    ///   - baselineToClient: the same for the out-of-flow probes to the client.
    /// - Returns: the branch's numbers, or `nil` when either list to the merge point is empty.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for a negative or non-finite delay,
    ///   `.invalidConfiguration` for an invalid configuration, `.statisticsFailed` if the routine rejects its input.
    public static func branch(
        flowToMergePoint: [Double?], baselineToMergePoint: [Double?], flowToClient: [Double?],
        baselineToClient: [Double?], configuration: Configuration = Configuration()
    ) throws(WeheAnalysisError) -> Branch? {
        let configuration = try configuration.validated()
        guard !flowToMergePoint.isEmpty, !baselineToMergePoint.isEmpty else { return nil }
        let timeout = configuration.timeout
        let mergePoint = try compare(
            try delays(flowToMergePoint, unanswered: timeout, cap: timeout, role: "in-flow merge-point"),
            try delays(baselineToMergePoint, unanswered: timeout, cap: timeout, role: "baseline merge-point"),
            minimum: configuration.mergePointExtraDelay, alpha: configuration.alpha)
        let flowPath = try delays(flowToClient, unanswered: nil, cap: timeout, role: "in-flow path")
        let basePath = try delays(baselineToClient, unanswered: nil, cap: timeout, role: "baseline path")
        var path: Comparison?
        if !flowPath.isEmpty, !basePath.isEmpty {
            path = try compare(
                flowPath, basePath, minimum: configuration.pathExtraDelay, alpha: configuration.alpha)
        }
        return Branch(
            mergePoint: mergePoint, path: path, flowProbes: flowToMergePoint.count,
            flowUnanswered: flowToMergePoint.count(where: { $0 == nil }))
    }

    /// The signal's verdict from the published gate and both branches.
    /// - Parameters:
    ///   - bothDifferentiated: both servers' simultaneous replays ended in differentiation (analysis.md 6.2 step 5).
    ///   - first: server 1's branch, `nil` when it was not measured.
    ///   - second: server 2's branch.
    public static func verdict(
        bothDifferentiated: Bool, first: Branch?, second: Branch?, configuration: Configuration = Configuration()
    ) -> LocalizationVerdict {
        guard bothDifferentiated else { return .noEvidence }
        let branches = [first, second].compactMap { $0 }
        if branches.contains(where: \.queuesBeforeMergePoint) { return .noEvidence }
        guard branches.count == 2,
            branches.allSatisfy({ $0.queuesOnPath && $0.flowProbes >= configuration.minimumProbes })
        else { return .inconclusive }
        return .accessNetwork
    }

    private static func compare(_ flow: [Double], _ baseline: [Double], minimum: Double, alpha: Double)
        throws(WeheAnalysisError) -> Comparison
    {
        do {
            let pValue =
                try MannWhitneyU.test(flow, baseline, alternative: .greater, method: .asymptotic, continuity: true)
                .pValue
            let extra = try Descriptive.median(flow) - Descriptive.median(baseline)
            // With the continuity correction the p-value is never NaN (every delay equal gives 1).
            return Comparison(
                pValue: pValue, extraDelay: extra, significant: pValue < alpha && extra >= minimum)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "merge-point queue test failed: \(error.message)")
        }
    }

    /// Validated delays; an unanswered probe becomes `unanswered`, or is left out when that is `nil`.
    private static func delays(_ values: [Double?], unanswered: Double?, cap: Double, role: String)
        throws(WeheAnalysisError) -> [Double]
    {
        var result: [Double] = []
        result.reserveCapacity(values.count)
        for value in values {
            guard let value else {
                if let unanswered { result.append(unanswered) }
                continue
            }
            guard value.isFinite, value >= 0 else {
                throw WeheAnalysisError(.invalidSample, "\(role) probe delay \(value) is negative or not finite")
            }
            result.append(min(value, cap))
        }
        return result
    }
}

extension MergePointQueueSummary.Branch {
    /// The throttled flow queues (or is dropped) before the merge point.
    public var queuesBeforeMergePoint: Bool { mergePoint.significant }
    /// The throttled flow meets a queue of its own somewhere on its path.
    public var queuesOnPath: Bool { path?.significant ?? false }
}
