import ArgumentParser
import Foundation
import WeheCore
import WeheStore

/// `wehe results list`: newest first.
struct ListResults: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List past results, newest first.")

    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?
    @Option(name: .long, help: "Show at most this many tests.")
    var limit: Int = 50
    @Flag(name: .long, help: "Print one JSON array.")
    var json = false

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let (rows, localizations) = try await History.with(directory) { store in
                (
                    try await store.history(userID: settings.userID, beforeHistoryCount: nil, limit: max(1, limit)),
                    Array(try await store.localizations(userID: settings.userID).prefix(max(1, limit)))
                )
            }
            if json {
                let items = rows.map { row in
                    "{\"kind\":\"test\",\"id\":\(row.key.historyCount),\"date\":\"\(ResultsCommand.date(row.metadata.startedAt))\",\"replay\":\"\(row.metadata.replayName)\",\"verdict\":\"\(row.analysis?.verdict.rawValue ?? "")\",\"originalMeanMbps\":\(row.analysis?.originalMeanMbps ?? 0),\"controlMeanMbps\":\(row.analysis?.controlMeanMbps ?? 0)}"
                }
                print("[" + (items + localizations.map(LocalizationRows.json)).joined(separator: ",") + "]")
                return
            }
            guard !rows.isEmpty || !localizations.isEmpty else {
                print(strings.noResults)
                return
            }
            defer {
                if !localizations.isEmpty {
                    if !rows.isEmpty { print("") }
                    print(LocalizationRows.table(localizations, strings: strings))
                }
            }
            guard !rows.isEmpty else { return }
            let table = rows.map { row in
                [
                    String(row.key.historyCount), ResultsCommand.date(row.metadata.startedAt), row.metadata.replayName,
                    row.analysis.map { strings.verdict($0.verdict.rawValue) } ?? "-",
                    row.analysis.map { Terminal.format($0.originalMeanMbps, decimals: 1) } ?? "-",
                    row.analysis.map { Terminal.format($0.controlMeanMbps, decimals: 1) } ?? "-",
                ]
            }
            print(
                Terminal.table(
                    header: [
                        "ID", strings.dateHeader, strings.testHeader, strings.verdictHeader, strings.originalHeader,
                        strings.controlHeader,
                    ],
                    rows: table, rightAligned: [0, 4, 5]))
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}
