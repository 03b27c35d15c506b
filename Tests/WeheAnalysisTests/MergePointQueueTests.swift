import Testing
import WeheAnalysis
import WeheCore

// Reference values: probe delays measured on the kernel Y testbed by scripts/wehey_probe.py, p-values and medians
// from SciPy 1.17.1 (`python3 scripts/wehey_blindspot.py <data> --golden PLACEMENT/RUN/SERVER`, which calls
// scipy.stats.mannwhitneyu(flow, baseline, alternative="greater", method="asymptotic"); unanswered probes at 2 s).
private let goldenVectors:
    [(
        flow: [Double?], baseline: [Double?], pValue: Double, flowMedian: Double,
        baselineMedian: Double, queues: Bool
    )] = [
        // shared-flow/3/s: per-flow shaper on the shared segment; in-flow copies slightly slower than the baseline
        // (p < 0.01) but by 0.06 ms, under the 5 ms effect size: no queue before the merge point.
        (
            flow: [
                0.000142, 0.000211, 0.000224, 0.000128, 0.000136, 0.000134, 0.000202, 0.000479, 0.000227, 0.000233,
                0.00043, 0.000144, 0.000328, 0.000126, 0.000151, 0.000177, 0.000148, 0.000149, 0.000247, 0.000104,
            ],
            baseline: [6.8e-05, 7.2e-05, 0.000124, 7.9e-05, 0.000126, 0.000139, 7.5e-05, 8.6e-05, 0.000167, 0.000723],
            pValue: 0.003186561903512601, flowMedian: 0.000164, baselineMedian: 0.000105, queues: false
        ),
        // both-branches/1/t: a 4 Mbit/s shaper on branch b; the in-flow copies wait 20-61 ms in its queue.
        (
            flow: [0.053636, 0.042224, 0.044158, 0.050854, 0.061182, 0.025302, 0.032808, 0.042503, 0.020262, 0.000102],
            baseline: [
                0.000418, 0.00011, 0.000104, 0.000113, 0.000111, 0.000209, 0.000119, 0.000154, 8.9e-05, 0.00016,
            ],
            pValue: 0.0011011099712485391, flowMedian: 0.0423635, baselineMedian: 0.000116, queues: true
        ),
    ]

@Test("Merge-point queue test: reference values from SciPy on testbed probes", arguments: goldenVectors.indices)
func mergePointGolden(index: Int) throws {
    let vector = goldenVectors[index]
    let branch = try #require(try MergePointQueueTest.branch(flow: vector.flow, baseline: vector.baseline))
    #expect(Vectors.close(branch.pValue, vector.pValue, relative: 1e-9), "p \(branch.pValue)")
    #expect(abs(branch.flowMedian - vector.flowMedian) < 1e-12)
    #expect(abs(branch.baselineMedian - vector.baselineMedian) < 1e-12)
    #expect(branch.queues == vector.queues)
    #expect(branch.flowProbes == vector.flow.count)
    #expect(branch.flowUnanswered == vector.flow.count(where: { $0 == nil }))
}

@Test("Merge-point queue test: unanswered in-flow probes count as the timeout (a policer drops them)")
func mergePointUnanswered() throws {
    let baseline: [Double?] = Array(repeating: 0.0001, count: 6) + [0.0002, 0.0003]
    // Eight of ten in-flow probes dropped before the merge point, two answered at once: still a queue/drop.
    let dropped: [Double?] = Array(repeating: nil, count: 8) + [0.0001, 0.0002]
    let branch = try #require(try MergePointQueueTest.branch(flow: dropped, baseline: baseline))
    #expect(branch.queues)
    #expect(branch.flowMedian == 2)
    #expect(branch.flowUnanswered == 8)
    // The same answers without the drops: no queue.
    let answered = try #require(
        try MergePointQueueTest.branch(flow: [0.0001, 0.0002, 0.0001, 0.0001, 0.0003], baseline: baseline))
    #expect(!answered.queues)
    // Every delay equal: p = 1 (continuity correction), no queue.
    let equal = try #require(
        try MergePointQueueTest.branch(flow: [0.001, 0.001, 0.001], baseline: [0.001, 0.001]))
    #expect(equal.pValue == 1)
    #expect(!equal.queues)
}

@Test("Merge-point queue test: the verdict needs the gate, no queue on either branch and enough probes")
func mergePointVerdict() throws {
    let quiet = MergePointQueueTest.Branch(
        queues: false, pValue: 0.5, flowMedian: 0.0002, baselineMedian: 0.0001, flowProbes: 9, flowUnanswered: 0)
    var queued = quiet
    queued.queues = true
    var few = quiet
    few.flowProbes = 4
    #expect(MergePointQueueTest.verdict(bothDifferentiated: true, first: quiet, second: quiet) == .accessNetwork)
    #expect(MergePointQueueTest.verdict(bothDifferentiated: false, first: quiet, second: quiet) == .noEvidence)
    #expect(MergePointQueueTest.verdict(bothDifferentiated: true, first: quiet, second: queued) == .noEvidence)
    #expect(MergePointQueueTest.verdict(bothDifferentiated: true, first: queued, second: nil) == .noEvidence)
    #expect(MergePointQueueTest.verdict(bothDifferentiated: true, first: quiet, second: few) == .inconclusive)
    #expect(MergePointQueueTest.verdict(bothDifferentiated: true, first: quiet, second: nil) == .inconclusive)
}

@Test("Merge-point queue test: empty lists give no result, bad delays and configurations throw")
func mergePointInputs() throws {
    #expect(try MergePointQueueTest.branch(flow: [], baseline: [0.001]) == nil)
    #expect(try MergePointQueueTest.branch(flow: [0.001], baseline: []) == nil)
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try MergePointQueueTest.branch(flow: [-0.001], baseline: [0.001])
    }
    #expect(throws: WeheAnalysisError(.invalidSample, "")) {
        try MergePointQueueTest.branch(flow: [0.001], baseline: [.nan])
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try MergePointQueueTest.branch(
            flow: [0.001], baseline: [0.001], configuration: .init(alpha: 0))
    }
    #expect(throws: WeheAnalysisError(.invalidConfiguration, "")) {
        try MergePointQueueTest.branch(
            flow: [0.001], baseline: [0.001], configuration: .init(minimumProbes: 0))
    }
}
