import ArgumentParser
import WeheWire

/// `wehe replays validate <dir-or-file>`: every problem with file and field.
struct ValidateReplays: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check replay traces and catalogs; exits 1 only when a file is invalid.",
        discussion: "Catalog entries whose trace files are absent are reported as warnings."
    )

    @Argument(help: "A replay directory or a single trace/catalog file (default: the replay directory).")
    var path: String?
    @OptionGroup var replays: ReplayDirectoryOption
    @Flag(name: .long, help: "Print only the summary line and errors.") var quiet = false

    func run() async throws {
        let target = try path ?? replays.resolved()
        let report = ReplayValidator().validate(path: target)
        for finding in report.findings where !(quiet && finding.severity == .warning) {
            print(finding.description)
        }
        let errorFiles = Set(report.errors.map(\.file)).count
        print(
            "\(report.filesChecked) files checked: \(report.validTraces) valid traces, "
                + "\(report.errors.count) errors in \(errorFiles) files, \(report.warnings.count) warnings"
        )
        if report.hasErrors { throw ExitCode(CLIError.Code.invalidInput.rawValue) }
        if report.filesChecked == 0 {
            throw CLIError(code: .missingInput, "nothing to validate at \(target)").exit()
        }
    }
}
