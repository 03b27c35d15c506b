public import WeheCore
import WeheStatistics

/// An additional WeHeY signal beside the published tests (issue 18 item 6, not part of analysis.md section 6): does
/// the throttled flow queue *before* the point where the two servers' paths merge?
///
/// The published tests see a limiter that the two simultaneous replays share (their summed throughput, their
/// correlated losses). A per-flow shaper on the shared segment gives each replay its own queue and rate, which from
/// the endpoints looks like one throttler on each branch, and the published verdict says "no evidence". What still
/// differs is *where* each flow queues. Each server probes its replay connection with copies of its own data segments
/// whose TTL runs out at the merge point (the first router both paths share; ICMP time exceeded answers), and with
/// out-of-flow datagrams of the same TTL as a baseline. A throttler on the branch queues (or drops) the in-flow copies
/// before the merge point; a throttler on the shared segment does not.
///
/// Per branch: one-sided Mann-Whitney U ("in-flow delays are larger than the baseline's", normal approximation with
/// tie and continuity corrections), an unanswered probe counting as the prober's timeout (longer than any answer, so
/// in ranks an infinite delay). The branch *queues* when p < `alpha` and the in-flow median exceeds the baseline
/// median by at least `minimumExtraDelay`. The signal says "access network" only when both servers' replays showed
/// differentiation (the published gate), neither branch queues, and each branch has at least `minimumProbes` in-flow
/// probes; a branch that queues gives "no evidence"; anything else is inconclusive.
///
/// Measured so far by the prototype `scripts/wehey_probe.py` on the kernel Y testbed (Docs/testbed.md, "WeHeY's
/// blind spot"); the servers do not send these probes yet.
public enum MergePointQueueTest {
    /// Thresholds of the test.
    public struct Configuration: Sendable, Hashable, Codable {
        /// Significance level of each branch's Mann-Whitney test (0.01).
        public var alpha: Double
        /// Smallest difference of medians (in-flow − baseline), seconds, that counts as a queue (0.005).
        public var minimumExtraDelay: Double
        /// In-flow probes each branch needs for an "access network" answer (5).
        public var minimumProbes: Int
        /// The delay an unanswered probe counts as, seconds (the prober's timeout, 2).
        public var timeout: Double

        /// Creates a configuration with the defaults used on the testbed.
        public init(
            alpha: Double = 0.01, minimumExtraDelay: Double = 0.005, minimumProbes: Int = 5, timeout: Double = 2
        ) {
            self.alpha = alpha
            self.minimumExtraDelay = minimumExtraDelay
            self.minimumProbes = minimumProbes
            self.timeout = timeout
        }

        /// Checks the values.
        /// - Throws: `WeheAnalysisError` with code `.invalidConfiguration` naming the offending value.
        public func validated() throws(WeheAnalysisError) -> Configuration {
            guard alpha.isFinite, alpha > 0, alpha < 1 else {
                throw WeheAnalysisError(.invalidConfiguration, "alpha must lie in (0, 1), got \(alpha)")
            }
            guard minimumExtraDelay.isFinite, minimumExtraDelay >= 0 else {
                throw WeheAnalysisError(
                    .invalidConfiguration, "the minimum extra delay must be finite and ≥ 0, got \(minimumExtraDelay)")
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

    /// One branch's numbers.
    public struct Branch: Sendable, Hashable, Codable {
        /// Whether the throttled flow queues before the merge point on this branch.
        public var queues: Bool
        /// One-sided Mann-Whitney p-value.
        public var pValue: Double
        /// Median in-flow delay, seconds (unanswered probes at the timeout).
        public var flowMedian: Double
        /// Median baseline delay, seconds.
        public var baselineMedian: Double
        /// In-flow probes sent.
        public var flowProbes: Int
        /// Of those, unanswered.
        public var flowUnanswered: Int

        /// Creates a branch result.
        public init(
            queues: Bool, pValue: Double, flowMedian: Double, baselineMedian: Double, flowProbes: Int,
            flowUnanswered: Int
        ) {
            self.queues = queues
            self.pValue = pValue
            self.flowMedian = flowMedian
            self.baselineMedian = baselineMedian
            self.flowProbes = flowProbes
            self.flowUnanswered = flowUnanswered
        }
    }

    /// Tests one branch.
    /// - Parameters:
    ///   - flow: delay of each in-flow probe to the merge point, seconds; `nil` for a probe that got no answer.
    ///   - baseline: the same for the out-of-flow probes.
    /// - Returns: the branch's numbers, or `nil` when either list is empty.
    /// - Throws: `WeheAnalysisError` with code `.invalidSample` for a negative or non-finite delay,
    ///   `.invalidConfiguration` for an invalid configuration, `.statisticsFailed` if the routine rejects its input.
    public static func branch(
        flow: [Double?], baseline: [Double?], configuration: Configuration = Configuration()
    ) throws(WeheAnalysisError) -> Branch? {
        let configuration = try configuration.validated()
        guard !flow.isEmpty, !baseline.isEmpty else { return nil }
        let flowDelays = try delays(flow, timeout: configuration.timeout, role: "in-flow")
        let baselineDelays = try delays(baseline, timeout: configuration.timeout, role: "baseline")
        let pValue: Double
        let flowMedian: Double
        let baselineMedian: Double
        do {
            pValue =
                try MannWhitneyU.test(
                    flowDelays, baselineDelays, alternative: .greater, method: .asymptotic, continuity: true
                ).pValue
            flowMedian = try Descriptive.median(flowDelays)
            baselineMedian = try Descriptive.median(baselineDelays)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "merge-point queue test failed: \(error.message)")
        }
        // A p-value is NaN only when every delay is equal (σ = 0): no evidence of a queue.
        let queues =
            !pValue.isNaN && pValue < configuration.alpha
            && flowMedian - baselineMedian >= configuration.minimumExtraDelay
        return Branch(
            queues: queues, pValue: pValue, flowMedian: flowMedian, baselineMedian: baselineMedian,
            flowProbes: flow.count, flowUnanswered: flow.count(where: { $0 == nil }))
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
        if branches.contains(where: \.queues) { return .noEvidence }
        guard branches.count == 2, branches.allSatisfy({ $0.flowProbes >= configuration.minimumProbes }) else {
            return .inconclusive
        }
        return .accessNetwork
    }

    private static func delays(_ values: [Double?], timeout: Double, role: String) throws(WeheAnalysisError)
        -> [Double]
    {
        var result: [Double] = []
        result.reserveCapacity(values.count)
        for value in values {
            guard let value else {
                result.append(timeout)
                continue
            }
            guard value.isFinite, value >= 0 else {
                throw WeheAnalysisError(.invalidSample, "\(role) probe delay \(value) is negative or not finite")
            }
            result.append(min(value, timeout))
        }
        return result
    }
}
