import ArgumentParser
import WeheAnalysis
import WeheClient

/// The options of a DPI search, shared by `wehe dpi` and `wehe run --dpi`.
struct DPIFlags: ParsableArguments {
    @Option(
        name: .customLong("method"),
        help: ArgumentHelp(
            "Who drives the search: server (the analyzer's DPIanalysis, default), local (the same search run by this "
                + "client) or binary (the offline binary search with masking, analysis.md 5.5).",
            valueName: "server|local|binary"))
    var method: String = DPIMethod.server.rawValue

    @Option(
        name: .customLong("budget"),
        help: ArgumentHelp(
            "Data budget of the probes in MB (10^6 bytes, sent and received); the search stops before a probe "
                + "that could exceed it.", valueName: "MB"))
    var budgetMB: Double?

    @Flag(
        name: .customLong("early-stop"),
        help: "End each probe once it has run twice as long as the test's control replay (at least 10 samples).")
    var earlyStop = false

    @Flag(name: .customLong("force-dpi"), help: "Search even when the test found no differentiation.")
    var force = false

    @Option(
        name: .customLong("carrier"),
        help: "Provider name sent with DPIanalysis (the server keeps one search per provider).")
    var carrier: String = "unknown"

    @Option(name: .customLong("max-probes"), help: "Probe limit (default 200, the reference's).")
    var maxProbes: Int = 200

    func validate() throws {
        do {
            _ = try options()
        } catch let error as CLIError {
            throw ValidationError(error.message)
        }
    }

    /// The client options.
    /// - Throws: `CLIError` `.invalidInput` for an unknown method or a non-positive budget or limit.
    func options() throws -> DPIOptions {
        guard let method = DPIMethod(rawValue: method) else {
            throw CLIError(code: .invalidInput, "--method must be server, local or binary, not '\(method)'")
        }
        var budget: Int?
        if let budgetMB {
            guard budgetMB.isFinite, budgetMB > 0 else {
                throw CLIError(code: .invalidInput, "--budget must be a positive number of MB")
            }
            budget = Int(budgetMB * 1_000_000)
        }
        guard maxProbes >= 1 else { throw CLIError(code: .invalidInput, "--max-probes must be at least 1") }
        var search = DPISearchConfiguration()
        search.maxProbes = maxProbes
        return DPIOptions(method: method, search: search, budgetBytes: budget, earlyStop: earlyStop)
    }
}
