import ArgumentParser
import Foundation
import WeheCore
import WeheStore
import WeheWire

/// `wehe results list`: newest first.
struct ListResults: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List past results, newest first.")

    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?
    @Option(name: .long, help: "Show at most this many tests.")
    var limit: Int = 50
    @Flag(name: .long, help: "Print one JSON array (every field of each test).")
    var json = false
    @OptionGroup var replays: ReplayDirectoryOption

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let records = ResultRecords.load(replays: replays, strings: strings)
            let (rows, localizations) = try await History.with(directory) { store in
                (
                    try await store.history(userID: settings.userID, beforeHistoryCount: nil, limit: max(1, limit)),
                    Array(try await store.localizations(userID: settings.userID).prefix(max(1, limit)))
                )
            }
            if json {
                let tests = rows.map { row -> String in
                    records.record(row).jsonText
                }
                print("[" + (tests + localizations.map(LocalizationRows.json)).joined(separator: ",") + "]")
                return
            }
            guard !rows.isEmpty || !localizations.isEmpty else {
                print(strings.noResults)
                return
            }
            if !rows.isEmpty { print(records.table(rows)) }
            if !localizations.isEmpty {
                if !rows.isEmpty { print("") }
                print(LocalizationRows.table(localizations, strings: strings))
            }
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}

/// `wehe results export --format csv|json [--output file]`: the whole history, for a spreadsheet or a script.
struct ExportResults: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export every past result as CSV or JSON.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case csv
        case json
    }

    @Option(name: .long, help: "csv (one line per test, with a header) or json (one array).")
    var format: Format = .csv
    @Option(name: .long, help: "Write to this file instead of standard output.")
    var output: String?
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?
    @OptionGroup var replays: ReplayDirectoryOption

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let records = ResultRecords.load(replays: replays, strings: strings)
            let rows = try await History.with(directory) { store in
                try await store.history(userID: settings.userID, beforeHistoryCount: nil, limit: Int(Int32.max))
            }
            let text: String
            switch format {
            case .csv: text = records.csv(rows)
            case .json: text = JSONValue.array(rows.map(records.json)).serialized() + "\n"
            }
            if let output {
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
                } catch {
                    throw CLIError(code: .storeFailed, "cannot write \(output): \(FileErrors.describe(error))")
                }
            } else {
                print(text, terminator: "")
            }
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}
