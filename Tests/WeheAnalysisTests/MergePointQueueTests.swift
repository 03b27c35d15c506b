import Testing
import WeheAnalysis
import WeheCore

// Reference values: probe delays measured on the kernel Y testbed by scripts/wehey_probe.py, p-values and extra
// delays from SciPy 1.17.1 (`python3 scripts/wehey_blindspot.py <data> --golden PLACEMENT/RUN/SERVER`, which calls
// scipy.stats.mannwhitneyu(flow, baseline, alternative="greater", method="asymptotic"); unanswered merge-point probes
// at 2 s, unanswered path probes left out). Seconds.
private struct GoldenBranch: Sendable {
    var name: String
    var flowToMergePoint: [Double?]
    var baselineToMergePoint: [Double?]
    var flowToClient: [Double?]
    var baselineToClient: [Double?]
    var mergePValue: Double
    var mergeExtra: Double
    var queuesBeforeMergePoint: Bool
    var pathPValue: Double
    var pathExtra: Double
    var queuesOnPath: Bool
}

private let goldenBranches: [GoldenBranch] = [
    // QLIMIT=4500 both-branches/4/s: a 4 Mbit/s shaper with a three-frame queue on branch a. In-flow copies wait
    // 3-7 ms before the merge point or are dropped there (p 2.3e-4, +4.9 ms): a queue before the merge point.
    GoldenBranch(
        name: "branch shaper, short queue",
        flowToMergePoint: [
            0.000188, nil, nil, nil, 0.002931, 0.00532, 0.003985, nil, 0.004435, 0.000121, 0.004441, 0.0059, nil, nil,
            nil, 0.006949, 0.002793, 0.00464, 0.004916, 0.003155,
        ],
        baselineToMergePoint: [
            0.000148, 0.000118, 0.000191, 0.000128, 0.003126, 0.000782, 0.000118, 0.000404, 0.00019, 0.000443,
            0.011176, 0.000131,
        ],
        flowToClient: [
            0.024933, nil, nil, nil, 0.02731, nil, nil, nil, 0.036409, 0.099189, nil, nil, nil, nil, nil, 0.022394,
            nil, nil, nil, 0.023971,
        ],
        baselineToClient: [
            0.023386, 0.020425, 0.020387, 0.020691, 0.023563, 0.051829, 0.020437, 0.028901, 0.023139, 0.023334,
            0.041533, 0.088715,
        ],
        mergePValue: 0.0002307819174729534, mergeExtra: 0.0049275000000000005, queuesBeforeMergePoint: true,
        pathPValue: 0.1208532060038825, pathExtra: 0.0027615, queuesOnPath: false),
    // QLIMIT=4500 shared-flow/1/t: a per-flow shaper on the shared segment. Nothing before the merge point
    // (p 0.62), 5.5 ms more to the client than the baseline (p 0.009): the flow queues after the merge point.
    GoldenBranch(
        name: "shared per-flow shaper, short queue",
        flowToMergePoint: [
            0.000229, 0.000204, 0.008766, 0.00053, 0.000225, 0.000983, 0.000166, 0.00014, 0.000152, 0.006701,
            0.00023,
        ],
        baselineToMergePoint: [
            0.00856, 0.001476, 0.000184, 0.000229, 0.000183, 0.00037, 0.000729, 0.000856, 0.000101, 0.000154,
            0.001102,
        ],
        flowToClient: [0.024913, nil, 0.02221, 0.026667, 0.063626, nil, 0.027172, nil, 0.127821, nil],
        baselineToClient: [
            0.030006, 0.021793, 0.021407, 0.020669, 0.046779, 0.022267, 0.020475, 0.02064, 0.020514, 0.021267,
            0.021703,
        ],
        mergePValue: 0.6162230513427357, mergeExtra: -0.00014099999999999998, queuesBeforeMergePoint: false,
        pathPValue: 0.009092272094653376, pathExtra: 0.0055125, queuesOnPath: true),
]

@Test(
    "Merge-point queue test: reference values from SciPy on testbed probes",
    arguments: goldenBranches.indices)
func mergePointGolden(index: Int) throws {
    let golden = goldenBranches[index]
    let branch = try #require(
        try MergePointQueueTest.branch(
            flowToMergePoint: golden.flowToMergePoint, baselineToMergePoint: golden.baselineToMergePoint,
            flowToClient: golden.flowToClient, baselineToClient: golden.baselineToClient))
    #expect(Vectors.close(branch.mergePoint.pValue, golden.mergePValue, relative: 1e-9), "\(golden.name)")
    #expect(abs(branch.mergePoint.extraDelay - golden.mergeExtra) < 1e-12, "\(golden.name)")
    #expect(branch.queuesBeforeMergePoint == golden.queuesBeforeMergePoint, "\(golden.name)")
    let path = try #require(branch.path)
    #expect(Vectors.close(path.pValue, golden.pathPValue, relative: 1e-9), "\(golden.name)")
    #expect(abs(path.extraDelay - golden.pathExtra) < 1e-12, "\(golden.name)")
    #expect(branch.queuesOnPath == golden.queuesOnPath, "\(golden.name)")
    #expect(branch.flowProbes == golden.flowToMergePoint.count)
    #expect(branch.flowUnanswered == golden.flowToMergePoint.count(where: { $0 == nil }))
}

@Test("Merge-point queue test: unanswered probes are a drop before the merge point, but no path evidence")
func mergePointUnanswered() throws {
    let baseline: [Double?] = Array(repeating: 0.0001, count: 6) + [0.0002, 0.0003]
    let pathBaseline: [Double?] = Array(repeating: 0.020, count: 6) + [0.021, 0.022]
    // Eight of ten copies dropped before the merge point: a branch throttler, even without a delay.
    let dropped = try #require(
        try MergePointQueueTest.branch(
            flowToMergePoint: Array(repeating: nil, count: 8) + [0.0001, 0.0002], baselineToMergePoint: baseline,
            flowToClient: [0.020, 0.021], baselineToClient: pathBaseline))
    #expect(dropped.queuesBeforeMergePoint)
    #expect(dropped.mergePoint.extraDelay > 1.9)
    #expect(dropped.flowUnanswered == 8)
    // Copies to the client that got no answer are left out: two answers at the baseline's delay are no queue, and
    // no answer at all leaves the path comparison out.
    let fast: [Double?] = [0.0001, 0.0002, 0.0001, 0.0001, 0.0003]
    let pathDrops = try #require(
        try MergePointQueueTest.branch(
            flowToMergePoint: fast, baselineToMergePoint: baseline,
            flowToClient: [nil, nil, nil, 0.020, 0.021], baselineToClient: pathBaseline))
    #expect(!pathDrops.queuesBeforeMergePoint)
    #expect(!pathDrops.queuesOnPath)
    let noPath = try #require(
        try MergePointQueueTest.branch(
            flowToMergePoint: fast, baselineToMergePoint: baseline, flowToClient: [nil, nil],
            baselineToClient: pathBaseline))
    #expect(noPath.path == nil)
    #expect(!noPath.queuesOnPath)
    // Every delay equal: p = 1 (continuity correction), no queue.
    let equal = try #require(
        try MergePointQueueTest.branch(
            flowToMergePoint: [0.001, 0.001, 0.001], baselineToMergePoint: [0.001, 0.001],
            flowToClient: [0.02, 0.02], baselineToClient: [0.02, 0.02]))
    #expect(equal.mergePoint.pValue == 1)
    #expect(!equal.queuesBeforeMergePoint)
    #expect(!equal.queuesOnPath)
}

@Test("Merge-point queue test: 'access network' needs the gate, a queue on both paths and none before the merge")
func mergePointVerdict() throws {
    let quiet = MergePointQueueTest.Comparison(pValue: 0.5, extraDelay: 0.0001, significant: false)
    let queue = MergePointQueueTest.Comparison(pValue: 1e-4, extraDelay: 0.04, significant: true)
    let shared = MergePointQueueTest.Branch(mergePoint: quiet, path: queue, flowProbes: 9, flowUnanswered: 0)
    let branchQueue = MergePointQueueTest.Branch(mergePoint: queue, path: queue, flowProbes: 9, flowUnanswered: 0)
    let policer = MergePointQueueTest.Branch(mergePoint: quiet, path: quiet, flowProbes: 9, flowUnanswered: 1)
    var few = shared
    few.flowProbes = 4
    var unmeasuredPath = shared
    unmeasuredPath.path = nil
    func verdict(_ gate: Bool, _ first: MergePointQueueTest.Branch?, _ second: MergePointQueueTest.Branch?)
        -> LocalizationVerdict
    {
        MergePointQueueTest.verdict(bothDifferentiated: gate, first: first, second: second)
    }
    #expect(verdict(true, shared, shared) == .accessNetwork)
    #expect(verdict(false, shared, shared) == .noEvidence)
    #expect(verdict(true, shared, branchQueue) == .noEvidence)
    #expect(verdict(true, branchQueue, nil) == .noEvidence)
    #expect(verdict(true, policer, policer) == .inconclusive)
    #expect(verdict(true, shared, policer) == .inconclusive)
    #expect(verdict(true, shared, few) == .inconclusive)
    #expect(verdict(true, shared, unmeasuredPath) == .inconclusive)
    #expect(verdict(true, shared, nil) == .inconclusive)
}

@Test("Merge-point queue test: empty lists give no result, bad delays and configurations throw")
func mergePointInputs() throws {
    func run(
        _ flow: [Double?], _ baseline: [Double?], configuration: MergePointQueueTest.Configuration = .init()
    ) throws -> MergePointQueueTest.Branch? {
        try MergePointQueueTest.branch(
            flowToMergePoint: flow, baselineToMergePoint: baseline, flowToClient: [0.02], baselineToClient: [0.02],
            configuration: configuration)
    }
    #expect(try run([], [0.001]) == nil)
    #expect(try run([0.001], []) == nil)
    #expect(throws: WeheAnalysisError(.invalidSample, "")) { try run([-0.001], [0.001]) }
    #expect(throws: WeheAnalysisError(.invalidSample, "")) { try run([0.001], [.nan]) }
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try MergePointQueueTest.branch(
            flowToMergePoint: [0.001], baselineToMergePoint: [0.001], flowToClient: [.infinity],
            baselineToClient: [0.02])
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try run([0.001], [0.001], configuration: .init(alpha: 0))
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try run([0.001], [0.001], configuration: .init(pathExtraDelay: -1))
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try run([0.001], [0.001], configuration: .init(minimumProbes: 0))
    }
}
