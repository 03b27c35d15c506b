import Foundation
import WeheClient
import WeheCore
import WeheWire

/// Runs a DPI search after a test and reports it (shared by `wehe dpi` and `wehe run --dpi`).
enum DPIStep {
    /// The DPI options of the running command (`wehe dpi`, `wehe run --dpi`); `nil`: no search after the tests.
    @TaskLocal static var flags: DPIFlags?

    /// Searches the classifier's bytes of `test` after `result`, unless the test found no differentiation and
    /// `--force-dpi` is off. Progress goes to the renderer (stderr); the report (or one JSON object) to stdout.
    /// - Returns: the search, or `nil` when skipped.
    /// - Throws: `CLIError` (interrupted, network, analyzer, history not writable).
    @discardableResult
    static func run(
        _ test: ReplayClient.Test,
        after result: TestResult,
        configuration: ReplayClientConfiguration,
        flags: DPIFlags,
        json: Bool,
        renderer: ProgressRenderer,
        envelope: AccessEnvelope? = nil
    ) async throws -> DPISearchResult? {
        let options = try flags.options()
        guard result.verdict == .differentiation || flags.force else {
            let why =
                "DPI search skipped for \(test.entry.id): the test found \(result.verdict.rawValue), and the search "
                + "needs differentiation (a classifier to break); --force-dpi searches anyway"
            if json {
                print(
                    JSONValue.object([
                        ("dpi", .string(test.entry.id)), ("result", .string("not-searched")),
                        ("verdict", .string(result.verdict.rawValue)), ("message", .string(why)),
                    ]).serialized())
            } else {
                renderer.note(why)
            }
            return nil
        }
        let client = DPIClient(client: ReplayClient(configuration: configuration), carrierName: flags.carrier)
        renderer.note(
            "DPI search for \(test.entry.id) (\(options.method.rawValue)\(options.earlyStop ? ", early stop" : "")): "
                + "each probe replays \(test.original.name) (about "
                + "\(Terminal.bytes(DPIOutput.expectedProbeBytes(result, test)))) with one region inverted")
        let search: DPISearchResult
        do {
            search = try await Interrupts.cancellingOnSIGINT { () async throws -> DPISearchResult in
                try await RunCommand.guarded(envelope) {
                    try await client.search(test, after: result, options: options) { event in
                        if let line = DPIOutput.progressLine(event) { renderer.note(line) }
                    }
                }
            }
        } catch let error as ReplayClientError {
            throw error.code == .cancelled ? CLIError(code: .interrupted, "interrupted") : CLIError(error)
        }
        if json {
            print(DPIOutput.json(search))
        } else {
            for line in DPIOutput.lines(search) { print(line) }
        }
        return search
    }
}
