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
    // shared-flow/1/s: a per-flow shaper (50 kB queue) on the shared segment. Nothing before the merge point
    // (p 0.18, +0.08 ms), 30 ms more to the client than the baseline (p 1.1e-4): "access network" on this branch.
    GoldenBranch(
        name: "shared per-flow shaper",
        flowToMergePoint: [
            0.000202, 0.000141, 0.000337, 0.000278, 0.000232, 0.000146, 0.000197, 0.000763, 0.000344, 0.000149, 0.0006,
            0.000244, 0.000185, 0.000165, 0.000337, 0.000404, 0.000117, 0.000129, 0.000231, 0.000303, 0.00014,
            0.000319,
        ],
        baselineToMergePoint: [
            0.012676, 0.000129, 9.5e-05, 0.000624, 0.013049, 0.000246, 0.000108, 8.5e-05, 0.000148, 0.000136,
            0.000221,
        ],
        flowToClient: [
            0.041924, 0.042462, 0.083557, 0.119582, 0.043271, 0.043942, 0.043249, 0.056543, 0.02087, 0.04786,
            0.046502, 0.072942, 0.07315, 0.072042, 0.066488, 0.078066, 0.050745, 0.096907, 0.147642, 0.081191,
            0.048191, 0.0223,
        ],
        baselineToClient: [
            0.036111, 0.021005, 0.030253, 0.023713, 0.032481, 0.021942, 0.020287, 0.02079, 0.022031, 0.051614,
            0.027418,
        ],
        mergePValue: 0.17964988882295713, mergeExtra: 8.35e-05, queuesBeforeMergePoint: false,
        pathPValue: 0.00011422451369925893, pathExtra: 0.029930999999999996, queuesOnPath: true),
    // both-branches-police/1/s: a policer on branch a. No queue anywhere (merge p 0.049 and +0.14 ms, path p 0.11
    // and +0.2 ms, four copies to the client dropped and left out): neither comparison is significant.
    GoldenBranch(
        name: "branch policer",
        flowToMergePoint: [
            0.000405, 0.000146, 0.003093, 0.000641, 0.001894, 0.002423, 0.000183, 0.000144, 0.032641, 0.001204,
            0.000196, 0.000165, 0.000209, 0.00033, 0.000249, 0.000865, 0.000165, 0.000142, 0.001398,
        ],
        baselineToMergePoint: [
            0.000263, 0.000203, 0.000492, 0.000189, 0.000109, 0.000105, 8.2e-05, 0.00011, 0.000192, 0.002423,
            0.000349,
        ],
        flowToClient: [
            0.020834, 0.020496, nil, nil, nil, nil, 0.024488, 0.020561, 0.152314, 0.023252, 0.021093, 0.020533,
            0.020414, 0.020462, 0.020993, 0.020542, 0.02131, 0.072244, 0.020836,
        ],
        baselineToClient: [
            0.024403, 0.020593, 0.020706, 0.020728, 0.020312, 0.020336, 0.020511, 0.020629, 0.020462, 0.024189,
            0.020618,
        ],
        mergePValue: 0.04873216743466433, mergeExtra: 0.000138, queuesBeforeMergePoint: false,
        pathPValue: 0.11125956605320658, pathExtra: 0.00021799999999999944, queuesOnPath: false),
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
