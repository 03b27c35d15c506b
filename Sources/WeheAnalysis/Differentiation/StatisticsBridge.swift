import WeheStatistics

/// Calls into `WeheStatistics` and turns its `StatisticsError` into `WeheAnalysisError` with code
/// `.statisticsFailed`, naming what was being computed.
enum StatisticsBridge {
    /// Mean of a non-empty finite list.
    static func mean(_ values: [Double], of what: String) throws(WeheAnalysisError) -> Double {
        do {
            return try Descriptive.mean(values)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "mean of \(what): \(error.message)")
        }
    }

    /// The KS method of the analysis: SciPy's selection, with the exact p-value of unequal sizes bounded to
    /// `n1·n2 ≤ KolmogorovSmirnov.analysisExactCells` (sample counts come from a client's upload; beyond the bound
    /// the exact sum costs seconds per test, the asymptotic p-value microseconds).
    static let ksMethod = KolmogorovSmirnov.Method.bounded(exactCells: KolmogorovSmirnov.analysisExactCells)

    /// Two-sided two-sample KS test (`ksMethod` unless told otherwise).
    static func kolmogorovSmirnov(
        _ first: [Double], _ second: [Double], of what: String, method: KolmogorovSmirnov.Method = ksMethod
    ) throws(WeheAnalysisError) -> KolmogorovSmirnov.Result {
        do {
            return try KolmogorovSmirnov.twoSample(first, second, method: method)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "KS test of \(what): \(error.message)")
        }
    }

    /// Two-sided two-sample KS test (`ksMethod` unless told otherwise) on two buffers that it sorts in place
    /// (same result as `kolmogorovSmirnov(_:_:of:method:)` on the unsorted values, without copying them).
    static func kolmogorovSmirnov(
        sorting first: inout [Double], _ second: inout [Double], of what: String,
        method: KolmogorovSmirnov.Method = ksMethod
    ) throws(WeheAnalysisError) -> KolmogorovSmirnov.Result {
        guard first.allSatisfy(\.isFinite), second.allSatisfy(\.isFinite) else {
            // Not sorted: the unsorted entry point names the offending value.
            return try kolmogorovSmirnov(first, second, of: what, method: method)
        }
        first.sort()
        second.sort()
        do {
            return try first.withUnsafeBufferPointer { (a) throws(StatisticsError) in
                try second.withUnsafeBufferPointer { (b) throws(StatisticsError) in
                    try KolmogorovSmirnov.twoSample(sortedFirst: a, sortedSecond: b, method: method)
                }
            }
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "KS test of \(what): \(error.message)")
        }
    }

    /// Max, min, mean, median and population standard deviation of a non-empty finite list.
    static func summarize(_ values: [Double], of what: String) throws(WeheAnalysisError) -> ThroughputSummary {
        do {
            return ThroughputSummary(
                max: try Descriptive.maximum(values), min: try Descriptive.minimum(values),
                mean: try Descriptive.mean(values), median: try Descriptive.median(values),
                standardDeviation: try Descriptive.populationStandardDeviation(values), count: values.count)
        } catch {
            throw WeheAnalysisError(.statisticsFailed, "summary of \(what): \(error.message)")
        }
    }
}
