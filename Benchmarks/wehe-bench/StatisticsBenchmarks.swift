import Foundation
import WeheStatistics

/// Prints the time of the exact two-sample KS p-value (analysis.md §2.3) for n = m = 100 and n = m = 10 000.
///
/// Two data shapes per size: complete separation (D = 1, the band covers the whole n·m lattice: the worst case)
/// and two samples from one distribution (D small, narrow band: the common case). Each figure is the median of
/// several runs of `KolmogorovSmirnov.twoSample` (sorting included). Build with `-c release`.
func runStatisticsBenchmarks() {
    print("== statistics: exact two-sample KS p-value ==")
    for size in [100, 10_000] {
        var generator = SeededGenerator(seed: UInt64(size))
        let first = (0..<size).map { _ in Double(generator.next() >> 11) * 0x1p-53 }
        let second = (0..<size).map { _ in Double(generator.next() >> 11) * 0x1p-53 }
        let shapes: [(String, [Double], [Double])] = [
            ("separated (D = 1)", first, second.map { $0 + 2 }),
            ("same distribution", first, second),
        ]
        for (name, a, b) in shapes {
            let repetitions = size <= 100 ? 201 : 5
            var wall: [Double] = []
            var cpu: [Double] = []
            var last: KolmogorovSmirnov.Result?
            for _ in 0..<repetitions {
                let (wallStart, cpuStart) = (seconds(CLOCK_MONOTONIC), seconds(CLOCK_PROCESS_CPUTIME_ID))
                last = try? KolmogorovSmirnov.twoSample(a, b, method: .exact)
                wall.append(seconds(CLOCK_MONOTONIC) - wallStart)
                cpu.append(seconds(CLOCK_PROCESS_CPUTIME_ID) - cpuStart)
            }
            let wallMedian = wall.sorted()[repetitions / 2] * 1e3
            let cpuMedian = cpu.sorted()[repetitions / 2] * 1e3
            let summary = last.map { "D = \($0.statistic), p = \($0.pValue)" } ?? "failed"
            print(
                "n = m = \(size), \(name): wall \(format(wallMedian)) ms, cpu \(format(cpuMedian)) ms "
                    + "(median of \(repetitions); \(summary))")
        }
    }
}

/// Seconds on `clock` (monotonic wall time or this process's CPU time).
private func seconds(_ clock: clockid_t) -> Double {
    var time = timespec()
    clock_gettime(clock, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

private func format(_ milliseconds: Double) -> String {
    String(format: "%.3f", milliseconds)
}
