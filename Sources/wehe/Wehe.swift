import ArgumentParser
import Foundation
import Logging
import WeheCore

/// The `wehe` command: run differentiation tests and look at replays and results.
@main
struct Wehe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wehe",
        abstract: "Detect whether your network treats some apps' traffic differently (Wehe for Swift).",
        discussion: """
            Start with `wehe demo`: a whole test against a server inside this program, no traffic leaves the \
            computer. Then `wehe run <test>` tests your network (`wehe replays` lists the tests) and `wehe results` \
            shows what your tests found.
            """,
        version: "wehe \(WeheVersion.number)",
        subcommands: [
            RunCommand.self, ServersCommand.self, LocalizeCommand.self, DPICommand.self, DemoCommand.self,
            ResultsCommand.self,
            DashboardCommand.self,
            MonitorCommand.self, SettingsCommand.self, ReplaysCommand.self, RecordCommand.self, AnalyzeCommand.self,
            TestbedCommand.self,
        ]
    )

    /// Bootstraps logging (warnings and errors on stderr; `WEHE_LOG_LEVEL=debug` for more), then runs the command.
    static func main() async {
        let level = ProcessInfo.processInfo.environment["WEHE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level ?? .warning
            return handler
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let text = HelpTopics.answer(arguments) {
            print(text)
            return
        }
        if let error = HelpTopics.unknownCommand(arguments, root: Wehe.self) {
            exit(withError: error.exit())
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
