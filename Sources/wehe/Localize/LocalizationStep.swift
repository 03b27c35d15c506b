import WeheClient
import WeheCore

/// Runs a localization after a single-server test and reports it (shared by `wehe localize` and
/// `wehe run --localize`).
enum LocalizationStep {
    /// Localizes `test` after `single` unless the single test found no differentiation and `force` is off.
    /// - Returns: the result, or `nil` when skipped.
    /// - Throws: `CLIError` (interrupted, invalid thresholds, history not writable).
    static func run(
        _ test: ReplayClient.Test,
        after single: TestResult,
        configuration: ReplayClientConfiguration,
        options: LocalizationOptions,
        force: Bool,
        strings: Strings,
        json: Bool,
        renderer: ProgressRenderer,
        envelope: AccessEnvelope? = nil
    ) async throws -> LocalizationResult? {
        guard single.verdict == .differentiation || force else {
            renderer.note(strings.localizationSkipped(test.entry.id))
            return nil
        }
        let client = LocalizationClient(configuration: configuration, options: options)
        let result: LocalizationResult
        do {
            let server = try client.singleTestServer()
            result = try await Interrupts.cancellingOnSIGINT { () async throws -> LocalizationResult in
                try await RunCommand.guarded(envelope) {
                    try await client.localize(
                        test, after: LocalizationClient.SingleTest(server: server, historyCount: single.historyCount)
                    ) { renderer.handle($0) }
                }
            }
        } catch let error as ReplayClientError {
            throw error.code == .cancelled ? CLIError(code: .interrupted, strings.interrupted) : CLIError(error)
        }
        if json {
            print(LocalizationOutput.json(result))
        } else {
            for line in LocalizationOutput.lines(result, strings: strings) { print(line) }
        }
        return result
    }
}
