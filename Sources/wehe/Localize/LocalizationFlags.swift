import ArgumentParser
import WeheAnalysis
import WeheClient

/// Options of a WeHeY localization, shared by `wehe localize` and `wehe run --localize`.
struct LocalizationFlags: ParsableArguments {
    @Flag(name: .long, help: "Localize even when the single-server test found no differentiation.")
    var force = false

    @Option(
        name: .customLong("mwu-threshold"),
        help: "Throughput-sum test: p-value below which the pair's sum looks like one replay (default 0.05).")
    var mwuThreshold: Double?

    @Option(
        name: .customLong("corr-p-threshold"),
        help: "Loss-correlation test: p-value below which one interval size counts as correlated (default 0.05).")
    var correlationPThreshold: Double?

    @Option(
        name: .customLong("corr-ratio-threshold"),
        help: "Loss-correlation test: fraction of correlated interval sizes needed (default 0.5).")
    var correlationRatioThreshold: Double?

    @Option(name: .customLong("localize-polls"), help: "Queries for the localization result at most (default 15).")
    var pollAttempts: Int?

    /// The options, the thresholds checked.
    /// - Throws: `CLIError` `.invalidInput` naming the bad threshold.
    func options() throws -> LocalizationOptions {
        let defaults = LocalizationRules()
        let rules = LocalizationRules(
            mwuPValueThreshold: mwuThreshold ?? defaults.mwuPValueThreshold,
            correlationPValueThreshold: correlationPThreshold ?? defaults.correlationPValueThreshold,
            correlationRatioThreshold: correlationRatioThreshold ?? defaults.correlationRatioThreshold)
        do {
            _ = try rules.validated()
        } catch {
            throw CLIError(code: .invalidInput, error.description)
        }
        var options = LocalizationOptions(rules: rules)
        if let pollAttempts {
            guard pollAttempts >= 1 else { throw CLIError(code: .invalidInput, "--localize-polls must be at least 1") }
            options.pollAttempts = pollAttempts
        }
        return options
    }
}
