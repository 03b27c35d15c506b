import ArgumentParser
import Foundation
import WeheCore
import WeheStore

/// `wehe results` (or `wehe results list`): the history of tests run from this computer; `wehe results show <id>`:
/// one test in full. The parent has no options of its own (a parent would take its subcommand's `--data-dir`).
struct ResultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results", abstract: "List past results, or show one.",
        subcommands: [ListResults.self, ShowResult.self, ExportResults.self], defaultSubcommand: ListResults.self)
}
