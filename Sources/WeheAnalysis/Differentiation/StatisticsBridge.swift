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

    /// Two-sided two-sample KS test with SciPy's default method selection.
    static func kolmogorovSmirnov(
        _ first: [Double], _ second: [Double], of what: String
    ) throws(WeheAnalysisError) -> KolmogorovSmirnov.Result {
        do {
            return try KolmogorovSmirnov.twoSample(first, second)
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
