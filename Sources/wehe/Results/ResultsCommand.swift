import ArgumentParser
import Foundation
import WeheCore
import WeheStore

/// `wehe results` (or `wehe results list`): the history of tests run from this computer; `wehe results show <id>`:
/// one test in full. The parent has no options of its own (a parent would take its subcommand's `--data-dir`).
struct ResultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "results", abstract: "List past results, or show one.",
        subcommands: [ListResults.self, ShowResult.self], defaultSubcommand: ListResults.self)

    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone.current
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}

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
            let rows = try await History.with(directory) { store in
                try await store.history(userID: settings.userID, beforeHistoryCount: nil, limit: max(1, limit))
            }
            if json {
                let items = rows.map { row in
                    "{\"id\":\(row.key.historyCount),\"date\":\"\(ResultsCommand.date(row.metadata.startedAt))\",\"replay\":\"\(row.metadata.replayName)\",\"verdict\":\"\(row.analysis?.verdict.rawValue ?? "")\",\"originalMeanMbps\":\(row.analysis?.originalMeanMbps ?? 0),\"controlMeanMbps\":\(row.analysis?.controlMeanMbps ?? 0)}"
                }
                print("[" + items.joined(separator: ",") + "]")
                return
            }
            guard !rows.isEmpty else {
                print(strings.noResults)
                return
            }
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
                    header: ["ID", strings.dateHeader, strings.testHeader, strings.verdictHeader, strings.originalHeader,
                        strings.controlHeader],
                    rows: table, rightAligned: [0, 4, 5]))
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}

/// `wehe results show <id>`.
struct ShowResult: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one test in full.")

    @Argument(help: "The test id from `wehe results`.") var id: Int
    @Option(name: .customLong("data-dir"), help: "Where settings and the result history live.")
    var dataDirectory: String?
    @Option(name: .customLong("lang"), help: "Language of messages: en or fr.")
    var language: String?

    func run() async throws {
        do {
            let directory = DataDirectory.resolve(dataDirectory)
            let settings = try directory.loadSettings()
            let strings = Strings.select(language ?? settings.language)
            let found = try await History.with(directory) { store in
                try await store.test(TestKey(userID: settings.userID, historyCount: id))
            }
            guard let record = found else {
                throw CLIError(code: .missingInput, "no result with id \(id)")
            }
            print("\(record.metadata.replayName)  #\(id)  \(ResultsCommand.date(record.metadata.startedAt))")
            if let summary = record.mainAnalysis?.summary {
                var verdict = strings.verdict(summary.verdict.rawValue)
                if let direction = summary.direction { verdict += " (\(strings.direction(direction.rawValue)))" }
                print("  verdict: \(verdict)")
                print("  original mean: \(Terminal.format(summary.originalMeanMbps, decimals: 3)) Mbit/s")
                print("  control mean:  \(Terminal.format(summary.controlMeanMbps, decimals: 3)) Mbit/s")
                print("  area_test: \(summary.areaTest)  ks2pVal: \(summary.ksPValue)  ks2dVal: \(summary.ksStatistic)")
                print("  ks2_ratio_test: \(summary.ks2RatioTest)")
                print(
                    "  thresholds: area \(summary.thresholds.area), p \(summary.thresholds.ksPValue) (\(summary.thresholds.ruleSet))")
                if let note = summary.note { print("  note: \(note)") }
            }
            for replay in record.replays {
                let label = replay.key.testID == 0 ? strings.original : strings.control
                let mean = replay.samples.meanMbps.map { Terminal.format($0, decimals: 2) } ?? "-"
                print("  \(label) \(replay.replayName): \(replay.samples.count) samples, mean \(mean) Mbit/s")
                print("    " + Sparkline.render(replay.samples.mbps, width: 60))
            }
        } catch let error as CLIError {
            throw error.exit()
        } catch let error as WeheStoreError {
            throw CLIError(code: .storeFailed, error.description).exit()
        }
    }
}

/// A text sparkline: values resampled to `width` columns, drawn with eight block heights.
enum Sparkline {
    static let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    static func render(_ values: [Double], width: Int) -> String {
        guard !values.isEmpty, width > 0 else { return "" }
        let columns = min(width, values.count)
        var resampled: [Double] = []
        for column in 0..<columns {
            let start = column * values.count / columns
            let end = max(start + 1, (column + 1) * values.count / columns)
            let slice = values[start..<end]
            resampled.append(slice.reduce(0, +) / Double(slice.count))
        }
        let top = resampled.max() ?? 0
        guard top > 0 else { return String(repeating: blocks[0], count: columns) }
        return String(resampled.map { blocks[min(blocks.count - 1, Int($0 / top * Double(blocks.count - 1) + 0.5))] })
    }
}
