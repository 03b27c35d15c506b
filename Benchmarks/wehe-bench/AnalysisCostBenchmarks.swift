import WeheAnalysis
import WeheCore
import WeheStatistics

/// What one test's analysis costs, by sample count: the analysis as the server runs it (the KS p-value exact up to
/// `KolmogorovSmirnov.analysisExactCells`, asymptotic beyond) against the unbounded SciPy `auto` choice (exact up to
/// 10 000 values, whatever n1·n2). Unequal sizes (n and n − 1), two levels far apart (D = 1, the exact sum's worst
/// case), 100 jackknife rounds. Real tests have about 100 (published clients) to 560 (ours) samples.
func runAnalysisCostBenchmarks(_ arguments: [String]) {
    let sizes =
        arguments.compactMap(Int.init).isEmpty ? [100, 560, 2_000, 10_000, 20_000] : arguments.compactMap(Int.init)
    print("== analysis cost: one test's statistics (full KS + 100 jackknife rounds), seconds ==")
    print("samples (n, n-1)   bounded (server)   unbounded (SciPy auto)   ratio")
    for size in sizes {
        let original = ThroughputSeries(mbps: (0..<size).map { Double(1 + $0 % 3) }, interval: 0.01)
        let control = ThroughputSeries(mbps: (0..<(size - 1)).map { Double(6 + $0 % 3) }, interval: 0.01)
        var bounded = try! DifferentiationAnalyzer(
            configuration: DifferentiationConfiguration(dropsLastSample: false))
        var unbounded = bounded
        bounded.kolmogorovSmirnovMethod = .bounded(exactCells: KolmogorovSmirnov.analysisExactCells)
        unbounded.kolmogorovSmirnovMethod = .auto
        let repetitions = size <= 2_000 ? 5 : 1
        let fast = measure(repetitions: repetitions) {
            _ = try! bounded.statistics(original: original, control: control, seed: 7)
        }
        // The unbounded exact sum at 20 000 samples takes minutes in a debug build: skipped past 10 000 there.
        var slowText = "skipped"
        var ratioText = ""
        #if DEBUG
            let runSlow = size <= 10_000
        #else
            let runSlow = true
        #endif
        if runSlow {
            let slow = measure(repetitions: repetitions) {
                _ = try! unbounded.statistics(original: original, control: control, seed: 7)
            }
            slowText = fixed(slow.median, 4)
            ratioText = fixed(slow.median / fast.median, 1)
        }
        print("\(size), \(size - 1)    \(fixed(fast.median, 4))    \(slowText)    \(ratioText)")
    }
}
